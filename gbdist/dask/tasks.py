"""What one Dask task runs: ordinary single-device gbdist on a (query block, index block) pair.

Every function here is pure (same inputs, same output, bit for bit), takes and returns
host or device blocks plus small arrays, and never sees more than two row partitions:
that is what lets Dask recompute any of them after a worker is lost.

Order is gbdist's: candidates sorted by (distance, global index), NaN distances last
(NumPy's order), so merging partial lists in any grouping gives the single-process answer.
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sps

from ..neighbors import NearestNeighbors, knn, knn_both, pairwise_distances_chunked


def proven_symmetric(metric, params: dict) -> bool:
    """Whether gbdist has *proven* d(a, b) == d(b, a) for this metric (its own analysis).

    The one place this package reads the symmetry proof (gbdist.compiler.symmetry).
    """
    from ..compiler.symmetry import is_symmetric
    from ..pairwise import metric_program
    return bool(is_symmetric(metric_program(metric, **params).plan))


def _xp(a):
    """NumPy for a host array, CuPy for a device one."""
    return np if isinstance(a, np.ndarray) else __import__("cupy")


def host(a):
    """A NumPy copy of a device array (CuPy), or the array itself."""
    get = getattr(a, "get", None)
    return get() if callable(get) and not isinstance(a, np.ndarray) else a


def block(x):
    """A partition as the task graph stores it (the identity: the data is the task's input)."""
    return x


# ---------------------------------------------------------------------------
# top-k lists
# ---------------------------------------------------------------------------


def empty_list(rows: int, dtype=np.float64):
    return np.empty((rows, 0), dtype=dtype), np.empty((rows, 0), dtype=np.int64)


def to_device(x):
    """A partition copied to the worker's GPU (CuPy CSR), for :func:`partition.to_device`."""
    import cupyx.scipy.sparse as cps
    if sps.issparse(x):
        return cps.csr_matrix(sps.csr_matrix(x))
    return x if not isinstance(x, np.ndarray) else cps.csr_matrix(sps.csr_matrix(x))


def merge(parts, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The k best of several candidate lists per row, by (distance, global index)."""
    parts = [p for p in parts if p[0].shape[1]] or parts[:1]
    if len(parts) == 1 and parts[0][0].shape[1] <= k:
        return parts[0]
    d = np.concatenate([p[0] for p in parts], axis=1)
    i = np.concatenate([p[1] for p in parts], axis=1)
    order = np.lexsort((i, d), axis=1)[:, :k]
    return np.take_along_axis(d, order, axis=1), np.take_along_axis(i, order, axis=1)


def merge_task(k: int, *parts):
    return merge(list(parts), k)


def part(pair, which: int):
    """One side of a symmetric pair's result (0: the row block's list, 1: the column block's)."""
    return pair[which]


def drop_self(d: np.ndarray, i: np.ndarray, k: int, row0: int):
    """From k + 1 candidates per query (global rows row0...), drop the query's own index.

    gbdist's rule (:func:`gbdist.neighbors.drop_self`), by index, never by value: drop
    index q for query q; when q is not among the candidates, all k + 1 are other points
    and the last is dropped.
    """
    rows = d.shape[0]
    hit = i == (np.int64(row0) + np.arange(rows, dtype=np.int64))[:, None]
    drop = np.where(hit.any(axis=1), hit.argmax(axis=1), i.shape[1] - 1)
    keep = np.ones(i.shape, dtype=bool)
    keep[np.arange(rows), drop] = False
    return d[keep].reshape(rows, k), i[keep].reshape(rows, k)


def finish(k: int, exclude_self: bool, row0: int, *parts):
    """The last merge of one query block: its k (+1) best, then its own index dropped."""
    d, i = merge(list(parts), k + 1 if exclude_self else k)
    if exclude_self:
        d, i = drop_self(d, i, k, row0)
    return d, i


# ---------------------------------------------------------------------------
# pair tasks
# ---------------------------------------------------------------------------


def pair_knn(Q, I, k: int, col0: int, metric, params: dict, backend, working_memory,
             symmetric=False, choice=None):
    """The k best of index block I (global rows col0...) for each row of Q: gb.knn on the pair,
    under the accuracy decision made once for the whole index (``choice``,
    :mod:`gbdist.dask.accuracy`; None: the pair decides, as gb.knn on it would).

    ``symmetric=None`` lets a diagonal block of a symmetric self-join (Q is I) use gb.knn's
    own symmetric tiles."""
    kk = min(k, I.shape[0])
    if kk == 0:
        return empty_list(Q.shape[0])
    if choice is None:
        d, i = knn(Q, I, k=kk, metric=metric, backend=backend, working_memory=working_memory,
                   exclude_self=False, symmetric=symmetric if Q is I else False, **params)
    else:
        d, i = _knn_decided(Q, I, kk, metric, params, backend, working_memory,
                            symmetric if Q is I else False, choice)
    return host(d), host(i) + np.int64(col0)


def _knn_decided(Q, I, k: int, metric, params: dict, backend, working_memory, symmetric,
                 choice):
    """gb.knn(Q, I) (exclude_self False) running the decided plan."""
    from ..front import colparams
    from ..neighbors import knn_plan
    from ..pairwise import as_input
    from ..runtime import get_backend, working_memory_bytes
    from .accuracy import plan_for
    budget = working_memory_bytes(working_memory)
    be = get_backend(backend, budget)
    Q, I = as_input(Q, "X"), as_input(I, "Y")
    return knn_plan(plan_for(metric, params, choice), Q, I, k, be, budget, False,
                    symmetric=symmetric, columns=colparams.split(params)[1])


def pair_symmetric(Xr, Xc, k: int, r0: int, c0: int, metric, params: dict, backend,
                   working_memory, choice=None):
    """One off-diagonal block pair (r, c) of a symmetric self-join, computed once: one pass
    over the Xr × Xc distances (:func:`gbdist.neighbors.knn_both`, the backend's own tiles,
    top-k selection and merge) gives Xr's candidates and, transposed, Xc's; under the
    accuracy decision made once for the whole index (``choice``)."""
    from .accuracy import plan_for
    plan = None if choice is None else plan_for(metric, params, choice)
    (dr, ir), (dc, ic) = knn_both(Xr, Xc, k, metric=metric, backend=backend,
                                  working_memory=working_memory, plan=plan, **params)
    return (host(dr), host(ir) + np.int64(c0)), (host(dc), host(ic) + np.int64(r0))


def on_device(x) -> bool:
    """Whether a partition is a device (CuPy) block."""
    return type(x).__module__.split(".")[0] in ("cupy", "cupyx")


def pair_radius(Q, I, radius, metric, params: dict, backend, working_memory) -> sps.csr_matrix:
    """Pairs of Q x I within radius, as a CSR of distances (I's local columns; the query
    block's last task puts the index blocks side by side)."""
    est = NearestNeighbors(radius=radius, metric=metric, metric_params=dict(params) or None,
                           backend=backend, working_memory=working_memory).fit(I)
    g = est.radius_neighbors_graph(Q, mode="distance")
    return sps.csr_matrix((host(g.data), host(g.indices).astype(np.int64), host(g.indptr)),
                          shape=(Q.shape[0], I.shape[0]))


def finish_radius(row0: int, exclude_self: bool, sort_results: bool, *parts) -> sps.csr_matrix:
    """One query block's pairs: the index blocks side by side (columns ascending), its own
    index dropped in a self-join, sorted by (distance, index) if asked."""
    g = sps.hstack(parts, format="csr") if len(parts) > 1 else parts[0]
    rows = np.repeat(np.arange(g.shape[0], dtype=np.int64), np.diff(g.indptr))
    c, v = np.asarray(g.indices, dtype=np.int64), g.data
    # hstack of blocks in index order keeps each row's columns ascending; sort anyway
    keep = np.ones(c.size, dtype=bool)
    if exclude_self:
        keep = c != rows + row0
    rows, c, v = rows[keep], c[keep], v[keep]
    order = np.lexsort((c, v, rows) if sort_results else (c, rows))
    indptr = np.zeros(g.shape[0] + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows, minlength=g.shape[0]), out=indptr[1:])
    return v[order], c[order], indptr


# ---------------------------------------------------------------------------
# generic reductions
# ---------------------------------------------------------------------------


def pair_reduce(Q, I, r0: int, c0: int, reduce_func, metric, params: dict, backend,
                working_memory):
    """``reduce_func(D, r0, c0)`` on the distances of Q x I (None: the block itself)."""
    chunks = [host(D) for D in pairwise_distances_chunked(
        Q, I, metric=metric, backend=backend, working_memory=working_memory, **params)]
    D = np.concatenate(chunks) if chunks else np.empty((0, I.shape[0]))
    return D if reduce_func is None else reduce_func(D, r0, c0)


def combine_task(combine, *parts):
    out = parts[0]
    for p in parts[1:]:
        out = combine(out, p)
    return out


def hstack_task(*parts):
    return np.concatenate(parts, axis=1)


def warm(metric, params: dict, backend, n_features: int):
    """Compile and cache the metric's plan on a worker (a tiny search), once."""
    rng = np.random.default_rng(0)
    X = sps.random(4, max(1, n_features), density=0.5, format="csr", random_state=rng)
    X.data = np.abs(X.data) + 0.1
    try:
        knn(X, k=1, metric=metric, backend=backend, **params)
    except Exception:  # noqa: BLE001 - warming is best effort; the real task reports errors
        return False
    return True


# ---------------------------------------------------------------------------
# replicated index: each worker searches a share of the tiles
# ---------------------------------------------------------------------------


def stack(device: bool, *blocks):
    """The blocks one under another (the whole matrix on this worker), on its GPU if asked."""
    mods = {type(b).__module__.split(".")[0] for b in blocks}
    if "cupyx" in mods or "cupy" in mods:
        import cupyx.scipy.sparse as cps
        out = cps.vstack([b if type(b).__module__.startswith("cupyx")
                          else cps.csr_matrix(sps.csr_matrix(b)) for b in blocks], format="csr")
        return out
    out = sps.vstack([sps.csr_matrix(b) for b in blocks], format="csr")
    return to_device(out) if device else out


def share_knn(X, need: int, w: int, W: int, metric, params: dict, backend, working_memory,
              symmetric, choice=None):
    """Share w of W of the self-join's tiles: every query's ``need`` best among them (global
    indices, on the device when X is; placeholders where a row met no tile of this share),
    under the accuracy decision made once for the replica (``choice``: :func:`.accuracy.whole`)."""
    from ..front import colparams
    from ..neighbors import knn_plan
    from ..runtime import get_backend, working_memory_bytes
    from .accuracy import plan_for
    plan = plan_for(metric, params, choice)
    budget = working_memory_bytes(working_memory)
    be = get_backend(backend, budget)
    d, i = knn_plan(plan, X, X, need, be, budget, False, symmetric=symmetric,
                    columns=colparams.split(params)[1], share=(w, W))
    if X.shape[0] < _INT32_MAX:  # a third fewer bytes to move; placeholders stay last
        i = _narrow(i)
    return d, i


_INT32_MAX = 2**31 - 1


def _narrow(i):
    """int64 candidate indices as int32, the placeholder (2**63 - 1) as 2**31 - 1 (both sort
    after every real index below it, with their NaN distance)."""
    xp = _xp(i)
    return xp.minimum(i, _INT32_MAX).astype(xp.int32)


def rows_of(share, a: int, z: int):
    """Rows a:z of a share's lists (a copy, so only those rows travel)."""
    d, i = share
    return d[a:z].copy(), i[a:z].copy()


def merge_shares(k: int, exclude_self: bool, need: int, *shares, row0: int = 0,
                 lists: bool = False):
    """The shares' lists (rows row0...) merged by (distance, index) where they are (device
    or host), each query's own index dropped (gbdist's rule), as :func:`answer` gives
    them to the client."""
    narrow = shares[0][1].dtype == np.int32  # moved narrow (share_knn): return them so
    d, i = merged(k, exclude_self, need, *shares, row0=row0)
    if narrow:  # the client widens them again (search._replicated_knn)
        i = i.astype(_xp(d).int32)
    return answer(d, i, lists)


def merged(k: int, exclude_self: bool, need: int, *shares, row0: int = 0):
    """The shares' lists (rows row0...) merged by (distance, index) where they are, each
    query's own index dropped: (distances, int64 indices)."""
    from ..neighbors import drop_self
    shares = [(d, i.astype(np.int64)) for d, i in shares]  # merge in gbdist's int64
    d, i = shares[0]
    xp = _xp(d)
    if xp is np:
        from ..backends.cpu import merge_k
    else:
        from ..backends.cuda.topk import merge_k
    for d2, i2 in shares[1:]:
        d, i = merge_k(d, i, d2, i2, need)
    if exclude_self:  # drop_self finds query q at index q: shift to the block's rows
        d, i = drop_self(d, i - row0, k, xp)
        i += row0
    return d, i


def answer(d, i, lists: bool):
    """A block's final lists for the client: on the host, or (``lists``, lists on the
    device) as :class:`.ipc.Lists` that a client on this host copies GPU to GPU."""
    if lists and _xp(d) is not np:
        from .ipc import Lists
        return Lists(d, i)
    return host(d), host(i)


def lists_to_host(value):
    """A block's answer on the host: a :class:`.ipc.Lists` read where it lives (for a
    client that cannot map it), host arrays as they are."""
    from .ipc import Lists
    if isinstance(value, Lists):
        d, i = value.rows(0, value.shape[0])
        return host(d), host(i)
    return value


def share_lists(X, need: int, w: int, W: int, *common):
    """:func:`share_knn`'s lists in a buffer the workers of this host map GPU to GPU
    (:class:`.ipc.Lists`): only a 64-byte handle travels to the workers that merge them."""
    from .ipc import Lists
    return Lists(*share_knn(X, need, w, W, *common))


def merge_lists(k: int, exclude_self: bool, need: int, a: int, z: int, X, W: int, common,
                *lists, out_lists: bool = False):
    """Rows a:z of every share's :class:`.ipc.Lists`, copied GPU to GPU and merged
    (:func:`merge_shares`). A share that cannot be mapped here (its worker died, another
    host, no peer access) is recomputed from X, this worker's replica: the same answer."""
    from .ipc import Unreachable
    rows = []
    for w, lists in enumerate(lists):
        try:
            rows.append(lists.rows(a, z))
        except Unreachable:
            d, i = share_knn(X, need, w, W, *common)
            rows.append((d[a:z].copy(), i[a:z].copy()))
    return merge_shares(k, exclude_self, need, *rows, row0=a, lists=out_lists)


def prunes(X, metric, params: dict, backend, working_memory, choice=None) -> bool:
    """Whether ``gb.knn``'s self-join over X (a whole replica) takes the pruned search
    (:func:`gbdist.neighbors.pruned.decide`), under the replica's accuracy decision
    (``choice``): decided once, on one worker."""
    from ..front import colparams
    from ..neighbors.pruned import decide
    from ..neighbors.search import Search
    from ..pairwise import as_input
    from ..runtime import get_backend, working_memory_bytes
    from .accuracy import plan_for
    budget = working_memory_bytes(working_memory)
    be = get_backend(backend, budget)
    X = as_input(X, "X")
    s = Search(plan_for(metric, params, choice), X, X, be, budget,
               columns=colparams.split(params)[1])
    return bool(decide(s.b, budget)[0])


def rows_knn(X, need: int, a: int, z: int, k: int, exclude_self: bool, metric, params: dict,
             backend, working_memory, lists: bool = False, choice=None):
    """Rows a:z of a pruned self-join's answer, final (own index dropped): the pruned search
    of those queries against the whole replica X, as :func:`prunes` decided for all of X.
    Each query's lists come from its own row of overlaps and the index's summaries, so the
    rows are the whole search's; nothing is merged."""
    from ..front import colparams
    from ..neighbors import drop_self, knn_plan
    from ..pairwise import as_input
    from ..runtime import get_backend, working_memory_bytes
    from .accuracy import plan_for
    budget = working_memory_bytes(working_memory)
    be = get_backend(backend, budget)
    X = as_input(X, "X")
    d, i = knn_plan(plan_for(metric, params, choice), X[a:z], X, need, be, budget, False,
                    symmetric=False, columns=colparams.split(params)[1], prune=True)
    xp = _xp(d)
    if exclude_self:  # drop_self finds query q at index q: shift to the block's rows
        d, i = drop_self(d, i - a, k, xp)
        i += a
    if X.shape[0] < _INT32_MAX:
        i = _narrow(i)
    return answer(d, i, lists)
