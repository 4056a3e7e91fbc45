"""Stage 2, the compiler: from an expression over matrices to a checked plan.

- ``ir``: the frozen expression nodes (products, reductions, pointwise functions),
  one walk and one structural key.
- ``typecheck``: shapes (matrix, row, column, scalar) and operand roles.
- ``analysis``: the decision for each product (intersection, union by correction,
  two-pass union; the norm + dot expansion), every step a proof; ``verify`` checks
  a cached analysis against the op.
- ``cache``: the on-disk analysis cache (bounded loading, digests).
- ``plan``: the steps a backend executes and the fused epilogue.
- ``decision``: the record of one product's decision (``Analysis``), apart from sympy;
  ``stored``: plans and explanations written as records and read back without sympy.
- ``explain``: the decision, the proofs and the plan as a structured record of sympy
  formulas, rendered as text, Markdown, LaTeX and HTML (``explain_math`` tidies and
  prints the formulas; ``explain_figures`` draws them, matplotlib being optional).

May import ``gbdist.algebra`` and ``gbdist.errors``; never a front end, the runtime
or a backend. New strategy: a rule in ``analysis``/``plan`` plus a kernel template
in a backend (see docs/architecture.md).
"""
