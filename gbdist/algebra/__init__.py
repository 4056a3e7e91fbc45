"""Stage 1, the algebra: what an operator *is*, independent of any matrix.

- ``formulas``: building sympy formulas over ``x`` and ``y`` from Python (``Sym``),
  domains (real, nonnegative, boolean), size limits, printing.
- ``terms``: the same formulas as plain data (nested tuples): what is stored, the
  structural key of an op, and an evaluation that needs no sympy.
- ``evaluate``: the numeric evaluator with IEEE semantics, the scalar oracle that
  proofs and the NumPy backend share (the backend evaluates an op's term).
- ``proofs``: every identity the compiler relies on, checked by sympy and at special
  points (``Proof`` records).
- ``ops``: ``Op`` (a formula and a domain) and the built-in ops; ``monoids``: ``Monoid``
  (an op whose identity and flags are derived by proof).
- ``semirings``: ⊗ and ⊕ with an optional declared annihilator; the built-in semirings.
- ``lazy``: sympy imported on first use, and objects whose sympy fields are rebuilt
  from their terms on first read; ``records``: the on-disk store every cache uses.

Imports run one way inside the stage (lazy, terms <- records, evaluate <- formulas <-
proofs <- monoids <- ops <- semirings) and only down to ``gbdist.errors``, ``paths`` and
``version`` outside it: nothing here knows about matrices, plans or backends. The
built-in ops and monoids are proved once and stored (``ops``): importing this stage needs
no sympy when their record is there.
"""
