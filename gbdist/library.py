"""The built-in metrics, defined with the same algebra users have.

Nothing here is special-cased: each metric is an expression over products,
reductions and pointwise functions; the analysis finds the strategies and
rewrites (Manhattan's union correction, Euclidean's rank-1 expansion, ...).
"""
from __future__ import annotations

import math

from . import api as gb
from . import ops
from .algebra import semiring, semirings
from .metrics import Metric, register

_x, _y = ops.Sym(ops.X), ops.Sym(ops.Y)

canberra_op = ops.make_op(
    "canberra", gb.where(abs(_x) + abs(_y) == 0, 0, abs(_x - _y) / (abs(_x) + abs(_y))),
    doc="|x - y| / (|x| + |y|), 0/0 = 0")
abssum_op = ops.make_op("abssum", abs(_x + _y), doc="|x + y|")
hellinger_op = ops.make_op("hellinger", (gb.sqrt(_x) - gb.sqrt(_y)) ** 2,
                           doc="(sqrt(x) - sqrt(y))^2, x, y >= 0")
js_op = ops.make_op(
    "jensenshannon",
    gb.where(_x == 0, 0, _x * gb.log(2 * _x / (_x + _y)))
    + gb.where(_y == 0, 0, _y * gb.log(2 * _y / (_x + _y))),
    doc="x log(2x/(x+y)) + y log(2y/(x+y)), 0 log 0 = 0")
kl_op = ops.make_op("kl", gb.where(_x == 0, 0, _x * gb.log(_x / _y)),
                    doc="x log(x / y), 0 log 0 = 0")


def _norm2(M):
    return gb.sqrt(gb.reduce(gb.apply(ops.square, M), ops.plus))


def _nnz(M):
    return gb.reduce(gb.apply(ops.nonzero, M), ops.plus)


def _shared(A, B):
    return gb.mxm(gb.apply(ops.nonzero, A), gb.apply(ops.nonzero, B).T, semirings.plus_times)


def euclidean(A, B):
    """sqrt(Σ (x − y)²)"""
    return gb.sqrt(gb.mxm(A, B.T, semirings.plus_sqdiff))


def sqeuclidean(A, B):
    """Σ (x − y)²"""
    return gb.mxm(A, B.T, semirings.plus_sqdiff)


def manhattan(A, B):
    """Σ |x − y|"""
    return gb.mxm(A, B.T, semirings.plus_absdiff)


def chebyshev(A, B):
    """max |x − y|"""
    return gb.mxm(A, B.T, semirings.max_absdiff)


def minkowski(A, B, p=2.0):
    """(Σ |x − y|^p)^(1/p); p = inf is Chebyshev."""
    if p == math.inf:
        return chebyshev(A, B)
    if not p > 0:
        from .errors import InputError
        raise InputError("minkowski needs p > 0", got=f"p = {p}")
    sr = semiring(ops.absdiff_pow(p), ops.plus)
    return gb.power(gb.mxm(A, B.T, sr), 1.0 / p)


def canberra(A, B):
    """Σ |x − y| / (|x| + |y|), with 0/0 = 0"""
    return gb.mxm(A, B.T, semiring(canberra_op, ops.plus))


def braycurtis(A, B):
    """Σ |x − y| / Σ |x + y|"""
    return gb.mxm(A, B.T, semirings.plus_absdiff) / gb.mxm(A, B.T, semiring(abssum_op, ops.plus))


def cosine(A, B):
    """1 − ⟨a, b⟩ / (‖a‖ ‖b‖)"""
    return 1 - gb.mxm(A, B.T, semirings.plus_times) / (_norm2(A) * _norm2(B))


def correlation(A, B):
    """1 − ⟨a − ā, b − b̄⟩ / (‖a − ā‖ ‖b − b̄‖), expanded so the data stays sparse"""
    k = gb.ncols(A)
    sa, sb = gb.reduce(A, ops.plus), gb.reduce(B, ops.plus)
    qa = gb.reduce(gb.apply(ops.square, A), ops.plus)
    qb = gb.reduce(gb.apply(ops.square, B), ops.plus)
    num = gb.mxm(A, B.T, semirings.plus_times) - sa * sb / k
    va = gb.maximum(qa - sa * sa / k, 0)
    vb = gb.maximum(qb - sb * sb / k, 0)
    return 1 - num / gb.sqrt(va * vb)


def hamming(A, B):
    """(number of columns where x ≠ y) / k"""
    return gb.mxm(A, B.T, semirings.plus_ne) / gb.ncols(A)


def jaccard(A, B):
    """1 − |A ∩ B| / |A ∪ B| on the nonzero patterns (0 when both rows are empty)"""
    inter = _shared(A, B)
    union = _nnz(A) + _nnz(B) - inter
    return gb.where(gb.eq(union, 0), 0, (union - inter) / union)


def dice(A, B):
    """(|A| + |B| − 2|A ∩ B|) / (|A| + |B|) on the nonzero patterns"""
    total = _nnz(A) + _nnz(B)
    return (total - 2 * _shared(A, B)) / total


def russellrao(A, B):
    """(k − |A ∩ B|) / k on the nonzero patterns"""
    k = gb.ncols(A)
    return (k - _shared(A, B)) / k


def hellinger(A, B):
    """sqrt(Σ (√x − √y)²) / √2, nonnegative input"""
    return gb.sqrt(gb.mxm(A, B.T, semiring(hellinger_op, ops.plus))) / math.sqrt(2.0)


def jensenshannon(A, B):
    """sqrt(½ Σ x log(2x/(x+y)) + y log(2y/(x+y))), SciPy's for rows that sum to 1"""
    return gb.sqrt(gb.maximum(gb.mxm(A, B.T, semiring(js_op, ops.plus)) / 2, 0))


def kl_divergence(A, B):
    """Σ x log(x / y) over the columns stored in both rows (the shared support)"""
    return gb.mxm(A, B.T, semiring(kl_op, ops.plus, annihilator=0))


def inner_product(A, B):
    """⟨a, b⟩"""
    return gb.mxm(A, B.T, semirings.plus_times)


BUILTINS = {
    "euclidean": (euclidean, ("l2",)),
    "sqeuclidean": (sqeuclidean, ()),
    "manhattan": (manhattan, ("cityblock", "l1")),
    "chebyshev": (chebyshev, ("linf", "infinity")),
    "minkowski": (minkowski, ()),
    "canberra": (canberra, ()),
    "braycurtis": (braycurtis, ()),
    "cosine": (cosine, ()),
    "correlation": (correlation, ()),
    "hamming": (hamming, ()),
    "jaccard": (jaccard, ()),
    "dice": (dice, ()),
    "russellrao": (russellrao, ()),
    "hellinger": (hellinger, ()),
    "jensenshannon": (jensenshannon, ()),
    "kl_divergence": (kl_divergence, ("kldivergence",)),
    "inner_product": (inner_product, ("dot",)),
}


def load_builtins() -> None:
    import inspect
    for name, (fn, aliases) in BUILTINS.items():
        params = {p.name: p.default for p in list(inspect.signature(fn).parameters.values())[2:]}
        register(Metric(name, fn, params, fn.__doc__ or "", "builtin", aliases), replace=True)
