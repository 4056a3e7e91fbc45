"""k-nearest neighbours and radius queries: ONE loop over the backend protocol.

The distance matrix between queries (rows of X) and the index (rows of Y) is never
materialised. The runtime binds X and Y once, the backend prepares them once
(``backend.prepare``), and the output grid is cut into tiles by the one memory model
(:func:`gbdist.runtime.tile_shape`; column tiles the outer loop)::

    for each tile (r0:r1, c0:c1)          (gbdist.runtime.tiles)
        D = backend.run_tile(...)         distances of the tile (host or device)
        keep the k smallest of D          backend.select_k  (exact ties by index)
        merge with the best k so far      backend.merge_k   (by (distance, index))

A backend may answer a whole search in one fused pass instead (``backend.search_k``: the
compiled CPU backend's ``gb_knn`` for plans whose products are all scatters, docs/cpu.md);
it is asked first, unless a tile would need the runtime's repair, and may decline.

A self-join under a metric proven symmetric (:func:`gbdist.compiler.symmetry.is_symmetric`)
visits square tiles on and above the diagonal only; each feeds its rows' top-k and,
transposed, its columns' (a diagonal tile on and above its own diagonal: ``upper``). Order is total and deterministic: by distance, then by the
lower index; NaN distances sort after every number (NumPy's order). So the answer does
not depend on how the grid was tiled, nor on the backend.
"""
from __future__ import annotations

import numbers
from typing import Callable

import numpy as np
import scipy.sparse as sps

from ..compiler import ir
from ..compiler.plan import Plan
from ..backends.cpu import merge_k, select_k
from ..errors import InputError, ParameterError
from .. import names
from .shares import SYMMETRIC_TILES_PER_SHARE, TILES_PER_SHARE, _finer, _share
from ..front.library import find_metric
from ..pairwise import (
    as_input, check_n_jobs, metric_program, precomputed_distances, sklearn_dtype, sklearn_metric,
    split_finite_kw)
from ..runtime import (
    Repair, bind, budget_of, get_backend, result_dtype, run_shrinking, select_columns,
    symmetric_side, tile_shape, takes_upper, tiles,
    working_memory_bytes)
from ..compiler.symmetry import is_symmetric
from .pruned import search as pruned_search
from ..front import colparams

__all__ = ["knn", "knn_both", "knn_plan", "pairwise_distances_chunked", "select_k", "merge_k", "Search",
           "drop_self"]


# ---------------------------------------------------------------------------
# the one loop
# ---------------------------------------------------------------------------


class Search:
    """X and Y bound once and prepared once on a backend, with the search's budget."""

    def __init__(self, plan, X, Y, be, budget: int | None, dtype=None, columns=None):
        self.plan = plan
        self.be = be
        needed = {s.name for s in ir.symbols(plan.expr)}
        inputs = {k: v for k, v in (("A", X), ("B", Y)) if k in needed}
        inputs.update(columns or {})  # column operands (w=...), bound by name
        self.b = bind(plan, inputs, drop_zeros=True, dtype=dtype,
                      labels={"A": "X", "B": "X" if Y is X else "Y"}, xp=be.xp)
        self.budget = budget_of(be, budget)
        self.prepared = be.prepare(self.b)
        self.xp = be.xp

    def grid(self, values, rows: int, cols: int):
        """A tile of any output kind (matrix, col, row, scalar) as rows × cols."""
        xp = self.xp
        kind = self.plan.output_kind
        if kind == "col":
            values = values.reshape(rows, 1)
        elif kind == "row":
            values = values.reshape(1, cols)
        elif kind != "matrix":
            values = values.reshape(1, 1)
        if values.shape == (rows, cols):
            return values
        return xp.ascontiguousarray(xp.broadcast_to(values, (rows, cols)))

    def tiles(self, full_width: bool = False, share: tuple | None = None):
        """(r0, r1, c0, c1, D) of every tile, D rows × cols (``xp``); ``share=(w, W)``: only
        share w of W of those tiles (:func:`_share`), in the same order."""
        if share is not None:  # tiles fine enough to balance, only this share's computed
            rows, width = tile_shape(self.be, self.b, self.budget, full_width, not full_width)
            across = -(-max(self.b.n, 1) // width)  # then enough row blocks for 16 a share
            rows = _finer(self.b.m, rows, -(-TILES_PER_SHARE * share[1] // across), share)
            repair = Repair(self.b, self.budget)
            cells = ((r0, c0) for c0 in range(0, max(self.b.n, 1), width)
                     for r0 in range(0, max(self.b.m, 1), rows))
            yield from self._computed(cells, rows, width, repair, share)
            return
        for r0, r1, c0, c1, D in tiles(self.be, self.prepared, self.b, self.budget, full_width,
                                       select=not full_width):
            yield r0, r1, c0, c1, self.grid(D, r1 - r0, c1 - c0)

    def symmetric_tiles(self, share: tuple | None = None):
        """Square tiles (r0:r1, c0:c1) with c0 >= r0 of a self-join (``share``: as tiles')."""
        b = self.b
        s = symmetric_side(self.be, self.plan, b.n, self.budget or 2**62, b.dtype)
        if share is not None:  # an even number of row blocks, at least 8 tiles a share
            t = SYMMETRIC_TILES_PER_SHARE * share[1]
            s = _finer(b.n, s, next(k for k in range(2, 2 * t + 2, 2) if k * (k + 1) >= 2 * t),
                       share)
        cells = ((r0, c0) for r0 in range(0, b.n, s) for c0 in range(r0, b.n, s))
        yield from self._computed(cells, s, s, Repair(b, self.budget), share, upper=True)

    def _computed(self, cells, rows: int, width: int, repair, share, upper: bool = False):
        m, n = self.b.m, self.b.n
        cells = list(cells)
        if share is not None:  # every worker makes the same choice: no coordination
            half = upper and takes_upper(self.be)  # diagonal tiles cost half their cells
            cells = [cells[t] for t in _share(cells, rows, width, m, n, *share, upper=half)]
        for r0, c0 in cells:
            r1, c1 = min(m, r0 + rows), min(n, c0 + width)
            # the symmetric self-join's diagonal tiles: their cells above the diagonal suffice
            tile = run_shrinking(self.be, self.prepared, r0, r1, c0, c1, upper=upper)
            yield r0, r1, c0, c1, self.grid(repair(tile, r0, r1, c0, c1), r1 - r0, c1 - c0)

    def host(self, x):
        return x if self.b.on_device else self.be.to_host(x)


def drop_self(d, i, k: int, xp=np, first_if_missing: bool = False):
    """From k + 1 candidates per query, drop the query's own index (else the last one).

    Exclusion is by index, never by value: for query q, the candidate whose index is q
    is dropped; a duplicate of q (at d(q, q) too) stays a neighbour. When q is not among
    the k + 1 candidates, all of them are other points and, sorted by (distance, index),
    the first k are the k nearest others: the last is dropped. That is the answer of a
    brute force that removes the diagonal by index and orders ties by index, for every
    metric, including those under which q is not its own nearest (``inner_product``,
    ``kl_divergence``) or d(q, q) is NaN or not 0. (scikit-learn drops the first
    candidate instead, in the one case its metrics reach — more than k exact duplicates
    of q with lower indices — which changes only which of the tied duplicates are
    returned, not the distances.) ``first_if_missing``: the first (scikit-learn's rule
    for a precomputed graph, whose diagonal is implicit). NumPy or CuPy (``xp``), with no
    synchronisation: column j of the answer is candidate j, or j + 1 from the dropped
    position on."""
    rows, width = i.shape
    hit = i == xp.arange(rows, dtype=xp.int64)[:, None]
    other = 0 if first_if_missing else width - 1
    drop = xp.where(hit.any(axis=1), hit.astype(xp.int8).argmax(axis=1), other)
    j = xp.arange(k, dtype=xp.int64)[None, :]
    src = j + (j >= drop[:, None])
    return (xp.ascontiguousarray(xp.take_along_axis(d, src, axis=1)),
            xp.ascontiguousarray(xp.take_along_axis(i, src, axis=1)))


def knn_plan(plan, X, Y, k, be, budget: int | None, exclude_self: bool, dtype=None,
             on_block: Callable | None = None, symmetric=None, columns=None,
             share: tuple | None = None, prune: bool | None = None) -> tuple:
    """The k nearest index rows of every query under a compiled ``plan`` on a backend
    object ``be``; see :func:`knn`. ``budget`` in bytes (None: the backend's default);
    ``on_block(pairs)`` is called after each tile with the pairs it covered.

    ``share=(w, W)``: worker w of W computes its share (:func:`_share`: balanced by cells)
    of the very tiles the whole search visits (symmetric ones included) and returns, for every query, its k best
    among them (placeholders: NaN distance, index 2**63 - 1); merging the W shares by
    (distance, index) gives the whole search's answer bit for bit (:mod:`gbdist.dask`).
    ``exclude_self`` is left to the merge (it must be False here). ``prune``: the pruned
    search's decision made elsewhere (:func:`gbdist.neighbors.pruned.search`)."""
    sym = _use_symmetric(plan, X, Y, symmetric)
    m, n = _nrows(X, "X"), _nrows(Y, "Y")
    s = Search(plan, X, Y, be, budget, dtype, columns)  # the inputs are checked first
    kk = _check_k(k, n, exclude_self)
    if share is not None and exclude_self:
        raise InputError("a share of a search leaves exclude_self to the merge",
                         got="exclude_self=True")
    xp = s.xp
    best_d = best_i = None
    found = None if share is not None else _fused(s, kk, sym, prune)
    if found is not None:  # one fused pass: no tile, same answer
        best_d, best_i = found
        if on_block is not None:
            on_block(m * n)
    for r0, r1, c0, c1, D in (() if found is not None else
                              s.symmetric_tiles(share) if sym else s.tiles(share=share)):
        if best_d is None:
            # Placeholders (NaN, largest index) sort after every real candidate, NaN ones too.
            best_d = xp.full((m, kk), np.nan, dtype=D.dtype)
            best_i = xp.full((m, kk), np.iinfo(np.int64).max, dtype=xp.int64)
        d, i = be.select_k(D, kk, c0)
        if c0 == 0 and not sym and d.shape[1] == kk:  # the first column tile: nothing to merge
            best_d[r0:r1], best_i[r0:r1] = d, i
        else:
            best_d[r0:r1], best_i[r0:r1] = be.merge_k(best_d[r0:r1], best_i[r0:r1], d, i, kk)
        mirrored = sym and c0 != r0
        if mirrored:
            d, i = select_columns(be, D, kk, r0, xp)
            del D
            best_d[c0:c1], best_i[c0:c1] = be.merge_k(best_d[c0:c1], best_i[c0:c1], d, i, kk)
        if on_block is not None:  # pairs covered: both orders off the diagonal
            on_block((r1 - r0) * (c1 - c0) * (2 if mirrored else 1))
    if best_d is None:  # a share with no tile
        best_d = xp.full((m, kk), np.nan, dtype=s.b.dtype)
        best_i = xp.full((m, kk), np.iinfo(np.int64).max, dtype=xp.int64)
    if exclude_self:
        best_d, best_i = drop_self(best_d, best_i, k, xp)
    return s.host(best_d.astype(s.b.dtype, copy=False)), s.host(best_i)


def _fused(s: Search, kk: int, sym: bool, prune: bool | None = None):
    """(distances, indices) from the backend's fused search (``search_k``: products,
    epilogue and top-k in one pass, e.g. the compiled CPU backend's dot-product family),
    or None: when the backend has none, declines (no such kernel, over the budget), or a
    tile would need the runtime's direct-form repair (non-finite inputs, or values large
    enough to overflow), which acts on materialised tiles. Asked first: the pruned search
    (:mod:`gbdist.neighbors.pruned`), where the algebra proves it and the data says it pays."""
    found = pruned_search(s.b, s.budget, kk, prune)
    if found is not None:
        return found
    fused = getattr(s.be, "search_k", None)
    if fused is None or s.b.on_device or s.plan.output_kind != "matrix":
        return None
    repair = Repair(s.b, s.budget)
    if repair.active and (repair.data_check or repair.large):
        return None
    return fused(s.prepared, kk, sym, s.budget)


def knn_both(X, Y, k: int, metric="euclidean", backend="auto", working_memory=None, *,
             plan=None, **params):
    """Both directions of one block pair under a metric proven symmetric, from ONE pass over
    the X × Y distances: ``((d, i) of X's k nearest in Y, (d, i) of Y's k nearest in X)``.

    Each tile feeds its rows' top-k (``select_k``) and, transposed, its columns' — what
    the symmetric self-join does above its diagonal, for two different blocks (the
    off-diagonal block pairs of a partitioned self-join, :mod:`gbdist.dask`). Indices are
    local (0-based in the other block); order by (distance, index), NaN last. ``plan``: the
    metric's plan with its accuracy decision made for the whole index (gbdist.dask.accuracy)
    instead of the metric's own."""
    X, Y = as_input(X, "X"), as_input(Y, "Y")
    if plan is None:
        plan = metric_program(metric, **params).plan
    if not is_symmetric(plan):
        raise InputError("knn_both needs a metric proven symmetric (d(a, b) == d(b, a))",
                         got=ir_text(plan), hint="run knn(X, Y) and knn(Y, X) instead")
    budget = working_memory_bytes(working_memory)
    be = get_backend(backend, budget)
    m, n = _nrows(X, "X"), _nrows(Y, "Y")
    s = Search(plan, X, Y, be, budget, columns=colparams.split(params)[1])
    xp = s.xp
    kr, kc = min(k, n), min(k, m)
    rows = cols = None
    for r0, r1, c0, c1, D in s.tiles():
        if rows is None:  # placeholders sort after every real candidate
            rows = (xp.full((m, kr), np.nan, dtype=D.dtype),
                    xp.full((m, kr), np.iinfo(np.int64).max, dtype=xp.int64))
            cols = (xp.full((n, kc), np.nan, dtype=D.dtype),
                    xp.full((n, kc), np.iinfo(np.int64).max, dtype=xp.int64))
        if kr:
            d, i = be.select_k(D, kr, c0)
            rows[0][r0:r1], rows[1][r0:r1] = be.merge_k(rows[0][r0:r1], rows[1][r0:r1], d, i, kr)
        if kc:
            d, i = select_columns(be, D, kc, r0, xp)
            del D
            cols[0][c0:c1], cols[1][c0:c1] = be.merge_k(cols[0][c0:c1], cols[1][c0:c1], d, i, kc)
    if rows is None:  # an empty side
        dt = s.b.dtype
        rows = (xp.empty((m, kr), dtype=dt), xp.empty((m, kr), dtype=xp.int64))
        cols = (xp.empty((n, kc), dtype=dt), xp.empty((n, kc), dtype=xp.int64))
    out = tuple((s.host(d.astype(s.b.dtype, copy=False)), s.host(i)) for d, i in (rows, cols))
    return out[0], out[1]


def _radius(plan, X, Y, radius, be, budget: int | None, exclude_self: bool, sort_results: bool,
            dtype=None, columns=None) -> sps.csr_matrix:
    """Every (query, index) pair at distance <= radius, as a CSR of distances.

    Column indices within a row are ascending, or sorted by (distance, index)
    with ``sort_results``. Stored entries are the pairs found (a distance of 0
    is stored too); comparisons in float64 on every backend.
    """
    if isinstance(radius, bool) or not isinstance(radius, numbers.Real) or np.isnan(radius):
        raise InputError("radius must be a number", got=repr(radius))
    m, n = _nrows(X, "X"), _nrows(Y, "Y")
    s = Search(plan, X, Y, be, budget, dtype, columns)
    xp, to_host = s.xp, be.to_host
    rows, cols, vals = [], [], []
    for r0, r1, c0, c1, D in s.tiles():
        r, c = xp.nonzero(D.astype(xp.float64, copy=False) <= radius)
        v = to_host(D[r, c]).astype(np.float64)
        r = to_host(r).astype(np.int64) + r0
        c = to_host(c).astype(np.int64) + c0
        if exclude_self:
            keep = r != c
            r, c, v = r[keep], c[keep], v[keep]
        rows.append(r)
        cols.append(c)
        vals.append(v)
    r = np.concatenate(rows) if rows else np.empty(0, dtype=np.int64)
    c = np.concatenate(cols) if cols else np.empty(0, dtype=np.int64)
    v = np.concatenate(vals) if vals else np.empty(0)
    order = np.lexsort((c, v, r) if sort_results else (c, r))
    indptr = np.zeros(m + 1, dtype=np.int64)
    np.cumsum(np.bincount(r, minlength=m), out=indptr[1:])
    out = sps.csr_matrix((v[order].astype(s.b.dtype), c[order], indptr), shape=(m, n))
    out.has_sorted_indices = not sort_results
    return out


_knn = knn_plan  # the name the CLI uses


# ---------------------------------------------------------------------------
# the searches
# ---------------------------------------------------------------------------


def _check_k(k, n_index: int, exclude_self: bool) -> int:
    if isinstance(k, bool) or not isinstance(k, numbers.Integral):
        raise ParameterError(f"n_neighbors does not take {type(k)} value, enter integer value",
                             got=repr(k))
    if k <= 0:
        raise InputError(f"Expected n_neighbors > 0. Got {k}")
    need = k + 1 if exclude_self else k
    if need > n_index:
        limit = n_index - 1 if exclude_self else n_index
        hint = f"use n_neighbors <= {limit}" if limit >= 1 else (
            f"the index holds {n_index} sample(s), so no n_neighbors works: fit on more samples"
            + (", or pass the query X explicitly" if exclude_self and n_index else ""))
        if exclude_self:
            raise InputError(f"Expected n_neighbors < n_samples_fit when the query is the fitted "
                             f"data (each point is left out of its own neighbours), but "
                             f"n_neighbors = {k}, n_samples_fit = {n_index}", hint=hint)
        raise InputError(f"Expected n_neighbors <= n_samples_fit, but n_neighbors = {k}, "
                         f"n_samples_fit = {n_index}", hint=hint)
    return need


def _nrows(x, name: str) -> int:
    shape = getattr(x, "shape", None)
    if shape is None:
        shape = np.shape(x)
    if len(shape) != 2:
        raise InputError(f"{name} must be a 2-D matrix", got=f"shape {tuple(shape)}",
                         hint="reshape a single sample with x.reshape(1, -1)")
    return int(shape[0])


def _use_symmetric(plan: Plan, X, Y, symmetric) -> bool:
    """Whether a search runs the symmetric self-join: ``symmetric`` None (auto) means when
    Y is X and the metric is proven symmetric (:func:`is_symmetric`); True insists (an
    error when it is not valid); False never."""
    if symmetric is None:
        return Y is X and is_symmetric(plan)
    if not isinstance(symmetric, (bool, np.bool_)):
        raise InputError("symmetric must be True, False or None", got=repr(symmetric))
    if not symmetric:
        return False
    if Y is not X:
        raise InputError("symmetric=True needs a self-join", got="an explicit index Y",
                         hint="call knn(X) (Y=None), or leave symmetric=None")
    if not is_symmetric(plan):
        raise InputError("symmetric=True needs a metric proven symmetric (d(a, b) == d(b, a))",
                         got=ir_text(plan),
                         hint="leave symmetric=None: gbdist then uses it only where it is proven")
    return True


def ir_text(plan: Plan) -> str:
    return ir.to_text(plan.expr)



def knn(X, Y=None, k: int = 5, metric="euclidean", backend="auto", working_memory=None,
        exclude_self=None, symmetric: bool | None = None, **params
        ) -> tuple[np.ndarray, np.ndarray]:
    """For each row of X, the k nearest rows of Y (of X when Y is None).

    Returns ``(distances, indices)``, both shaped (n_X, k), each row sorted by
    (distance, index): ties go to the lower index and NaN distances come last.
    Indices are int64. Distances are float32 when every input is float32.

    ``exclude_self`` (default: ``Y is None``) leaves index i out of query i's
    neighbours, as scikit-learn's ``kneighbors(X=None)`` does — a duplicate of
    row i at distance 0 is still returned. ``k`` larger than the index raises
    :class:`gbdist.InputError` (scikit-learn's ValueError "Expected n_neighbors
    <= n_samples_fit"). ``working_memory`` (MiB, or ``"1.5GiB"``) sizes the tiles; results do
    not depend on it. ``params`` go to the metric (``p`` for minkowski).

    ``symmetric``: in a self-join (Y None or Y is X) under a metric proven symmetric
    (:func:`is_symmetric`), compute each unordered pair once (square tiles on and above
    the diagonal, each feeding both blocks' top-k). None (default) does so whenever it is
    valid; True insists (:class:`gbdist.InputError` when it is not valid); False never.
    The answer is the same either way.
    """
    if exclude_self is None:
        exclude_self = Y is None
    X = as_input(X, "X")
    Y = None if Y is None else as_input(Y, "Y")
    names.check_keywords(knn, params,  # n_neighbors=: scikit-learn's name for k
                         find_metric(metric) if isinstance(metric, str) else None)
    plan = metric_program(metric, **params).plan
    budget = working_memory_bytes(working_memory)
    be = get_backend(backend, budget)
    return _knn(plan, X, X if Y is None else Y, k, be, budget, bool(exclude_self),
                symmetric=symmetric, columns=colparams.split(params)[1])


def _check_chunk_size(reduced, chunk_size: int) -> None:
    """scikit-learn's checks on a ``reduce_func`` result: None, or one sequence (or a tuple
    of sequences) with one entry per row of the chunk."""
    if reduced is None:
        return
    is_tuple = isinstance(reduced, tuple)
    parts = reduced if is_tuple else (reduced,)
    if any(isinstance(r, tuple) or not hasattr(r, "__iter__") for r in parts):
        raise ParameterError(f"reduce_func returned {reduced!r}. Expected sequence(s) of length "
                             f"{chunk_size}.",
                             hint="return one value per row of the chunk, or None")
    sizes = tuple(_num_samples(r) for r in parts)
    if any(n != chunk_size for n in sizes):
        raise InputError(f"reduce_func returned object of length "
                         f"{sizes if is_tuple else sizes[0]}. Expected same length as input: "
                         f"{chunk_size}.")


def _num_samples(x) -> int:
    shape = getattr(x, "shape", None)
    if shape is not None and len(shape):
        return int(shape[0])
    return len(x)


def pairwise_distances_chunked(X, Y=None, *, reduce_func: Callable | None = None,
                               metric="euclidean", n_jobs=None, working_memory=None,
                               backend="auto", dtype=None, **kwds):
    """Yield the distance matrix in row blocks (a generator), as scikit-learn's does.

    Same arguments as ``sklearn.metrics.pairwise_distances_chunked``: each block
    holds whole rows (all of Y) and is sized so that it and gbdist's temporaries
    fit ``working_memory`` MiB (default: the backend's,
    :meth:`gbdist.backends.base.Backend.default_budget`); any positive number is
    honoured, fractions too, or a string with a unit (``"512MiB"``, ``"2GB"``). ``reduce_func(D_chunk, start)``
    replaces each block by its result, which must be None or a sequence (or a
    tuple of sequences) with one entry per row, as scikit-learn checks.
    ``n_jobs`` is accepted and ignored (the backend decides its threads).
    ``metric="precomputed"`` yields X itself (checked) in one block. The other
    keywords are the metric's parameters (``p=``), plus ``ensure_all_finite``
    / ``force_all_finite``, passed on to the input check.

    Arguments are checked when the function is called; the distances are
    computed as the generator is consumed.
    """
    if reduce_func is not None and not callable(reduce_func):
        raise ParameterError("The 'reduce_func' parameter of pairwise_distances_chunked must be "
                             "a callable or None.", got=repr(reduce_func))
    check_n_jobs(n_jobs)
    params, finite_kw = split_finite_kw(kwds)
    X = as_input(X, "X")
    Y = None if Y is None else as_input(Y, "Y")
    if isinstance(metric, str) and metric == "precomputed":
        D = precomputed_distances(X, Y, **finite_kw, square=True)
        return _reduced_chunks(iter([(0, D.shape[0], D)]), reduce_func)
    metric = sklearn_metric(metric, params)  # scikit-learn's conventions (docs/metrics.md)
    plan = metric_program(metric, **params).plan
    budget = working_memory_bytes(working_memory)
    be = get_backend(backend, budget)
    Yv = X if Y is None else Y
    dt = result_dtype({"A": X, "B": Yv}, sklearn_dtype(metric, X, Y, dtype))
    s = Search(plan, X, Yv, be, budget, dt, colparams.split(params)[1])
    chunks = ((r0, r1, be.to_host(D).astype(dt)) for r0, r1, _, _, D in s.tiles(full_width=True))
    return _reduced_chunks(chunks, reduce_func)


def _reduced_chunks(chunks, reduce_func):
    for r0, r1, block in chunks:
        if reduce_func is None:
            yield block
        else:
            reduced = reduce_func(block, r0)
            _check_chunk_size(reduced, r1 - r0)
            yield reduced


def reads_nan(metric, metric_params=None) -> bool:
    """Whether an estimator's metric reads NaN as a missing value (nan_euclidean: its plan
    absorbs NaN, :mod:`gbdist.compiler.missing`), so that NaN passes its input checks."""
    from ..compiler.missing import absorbs_nan
    from ..errors import GbdistError
    params = dict(metric_params or {})
    if not isinstance(metric, str) or metric == "precomputed":
        return False
    try:
        plan = metric_program(sklearn_metric(metric, params), **params).plan
    except GbdistError:
        return False  # refused again, with its message, where the metric is built
    return absorbs_nan(plan.expr)
