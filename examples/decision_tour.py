"""A tour of the compiler's decisions for a few semirings.

For a product C[i, j] = ⊕_k f(a_ik, b_jk) the analysis looks at
L(x) = f(x, 0), R(y) = f(0, y) and ⊕:

* both are ⊕'s identity          → intersection (only shared columns)
* ⊕ invertible (plus)            → union-correction, maybe with an expansion
* ⊕ idempotent (max, min)        → two-pass-union
* otherwise                      → an AnalysisError that says why

Run:  python examples/decision_tour.py
"""
import gbdist as gb

A, B = gb.matrices("A B")
ops, sr = gb.ops, gb.semirings

tour = [
    ("dot product", sr.plus_times),
    ("manhattan", sr.plus_absdiff),
    ("squared euclidean", sr.plus_sqdiff),
    ("|x - y|^4", gb.semiring(ops.absdiff_pow(4), ops.plus)),
    ("chebyshev", sr.max_absdiff),
    ("min-plus (graphs)", sr.min_plus),
    ("dot, shortcut forbidden", gb.semiring(ops.times, ops.plus, annihilator=None)),
    ("absdiff with times", gb.semiring(ops.absdiff, ops.times)),
]

print(f"{'product':26} {'strategy':18} {'rank':>4}  why")
for label, semiring in tour:
    expr = gb.mxm(A, B.T, semiring)
    try:
        p = gb.explain(expr).products[0]
    except gb.AnalysisError as err:
        print(f"{label:26} {'(error)':18} {'':>4}  {err.message}")
        continue
    rank = "-" if p.expansion_rank is None else str(p.expansion_rank)
    print(f"{label:26} {p.strategy:18} {rank:>4}  {p.reason[:90]}")

# The whole account for one product: values at the fills, the rewrite, the
# expansion and every proof with how it was checked.
print()
print(gb.explain(gb.mxm(A, B.T, gb.semiring(ops.absdiff_pow(4), ops.plus))))
