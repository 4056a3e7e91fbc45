"""Stage 1, the algebra: what an operator *is*, independent of any matrix.

- ``formulas``: building sympy formulas over ``x`` and ``y`` from Python (``Sym``),
  domains (real, nonnegative, boolean), size limits, printing.
- ``evaluate``: the numeric evaluator with IEEE semantics, the scalar oracle that
  proofs and the NumPy backend share.
- ``proofs``: every identity the compiler relies on, checked by sympy and at special
  points (``Proof`` records).
- ``ops``: ``Op`` (a formula and a domain) and ``Monoid`` (an op whose identity and
  flags are derived by proof), and the built-in ops.
- ``semirings``: ⊗ and ⊕ with an optional declared annihilator; the built-in semirings.

Imports run one way inside the stage (formulas <- evaluate <- proofs <- ops <- semirings)
and only down to ``gbdist.errors`` outside it: nothing here knows about matrices,
plans or backends.
"""
