"""The distributed searches: task graphs of (query block, index block) pairs and exact merges.

For a kNN, every pair task runs gb.knn on two row partitions and returns only its
top-k (global indices); each query block's lists are merged in a tree of fan-in
``FAN_IN`` (by distance, then global index: the order gb.knn uses), so no worker holds
the whole index or a full distance row. In a self-join under a metric gbdist has proven
symmetric, each unordered block pair (r, c), c > r, is one task that feeds both blocks.
"""
from __future__ import annotations

import numbers
import os
import pickle
from dataclasses import dataclass, field

import numpy as np

from ..errors import InputError, ParameterError
from . import accuracy, replicas, tasks
from .defaults import whole_data_params
from .ipc import Lists, Unreachable
from .partition import Partitions, partition

FAN_IN = 8


def _client(client):
    if client is not None:
        return client
    from distributed import get_client
    try:
        return get_client()
    except ValueError:
        raise InputError("gbdist.dask needs a distributed.Client", got="no client",
                         hint="pass client=Client(...) or create one first "
                              "(Client(LocalCluster()) or Client('scheduler:8786'))") from None


def _check_cupy() -> None:
    try:
        import cupy  # noqa: F401
    except ImportError:
        raise InputError("to_device=True returns CuPy arrays, and CuPy is not installed here",
                         hint="install CuPy, or leave to_device=False for NumPy arrays") from None


def _check_k(k, n_index: int, exclude_self: bool) -> int:
    if isinstance(k, bool) or not isinstance(k, numbers.Integral):
        raise ParameterError("n_neighbors must be an integer", got=repr(k))
    if k <= 0:
        raise InputError(f"Expected n_neighbors > 0. Got {k}")
    need = int(k) + (1 if exclude_self else 0)
    if need > n_index:
        what = "n_neighbors < n_samples_fit" if exclude_self else "n_neighbors <= n_samples_fit"
        raise InputError(f"Expected {what}, but n_neighbors = {k}, n_samples_fit = {n_index}",
                         hint=f"use n_neighbors <= {n_index - (1 if exclude_self else 0)}")
    return need


def _tree(client, leaves: list, k: int, last):
    """Merge candidate-list futures FAN_IN at a time; ``last`` makes the root."""
    level = list(leaves)
    while len(level) > FAN_IN:
        level = [client.submit(tasks.merge_task, k, *level[a:a + FAN_IN], pure=True)
                 for a in range(0, len(level), FAN_IN)]
    return last(level)


def _use_symmetric(symmetric, self_join: bool, metric, params) -> bool:
    if symmetric is None:
        return self_join and tasks.proven_symmetric(metric, params)
    if not isinstance(symmetric, (bool, np.bool_)):
        raise InputError("symmetric must be True, False or None", got=repr(symmetric))
    if not symmetric:
        return False
    if not self_join:
        raise InputError("symmetric=True needs a self-join", got="an explicit index Y",
                         hint="leave symmetric=None")
    if not tasks.proven_symmetric(metric, params):
        raise InputError("symmetric=True needs a metric proven symmetric",
                         got=repr(metric), hint="leave symmetric=None")
    return True


# ---------------------------------------------------------------------------
# checkpoints: finished query blocks on disk, reused by a later run that asks
# ---------------------------------------------------------------------------


def _run_token(kind: str, Q: Partitions, I: Partitions, metric, params, extra) -> str:
    from dask.base import tokenize
    return tokenize(kind, Q.keys, tuple(Q.offsets), I.keys, tuple(I.offsets), repr(metric),
                    sorted(params.items()), extra)


def _ckpt_path(directory: str, token: str, b: int) -> str:
    return os.path.join(directory, f"gbdist-{token[:24]}-{b:06d}.pkl")


def _load(directory, token, b):
    if directory is None:
        return None
    path = _ckpt_path(directory, token, b)
    try:
        with open(path, "rb") as f:
            saved = pickle.load(f)
    except (OSError, EOFError, pickle.UnpicklingError):
        return None
    if not isinstance(saved, dict) or saved.get("token") != token:
        return None
    return saved["value"]


def _save(directory, token, b, value) -> None:
    path = _ckpt_path(directory, token, b)
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "wb") as f:
        pickle.dump({"token": token, "value": value}, f, protocol=pickle.HIGHEST_PROTOCOL)
    os.replace(tmp, path)  # atomic: a file is whole or absent


@dataclass(eq=False)
class Run:
    """A submitted search: one future per query block not already checkpointed.

    ``result()`` waits, saves each block to ``checkpoint`` as it finishes (when given)
    and assembles the answer; ``resumed`` lists the blocks loaded from the checkpoint.
    """

    client: object
    futures: dict
    done: dict
    token: str
    checkpoint: str | None
    assemble: object
    resumed: list = field(default_factory=list)
    partitions: tuple = ()
    symmetric: bool = False
    pair_tasks: int = 0  # distance tasks submitted (a symmetric block pair counts once)
    to_device: bool = False  # the answer as CuPy arrays on this process's GPU
    collect: object = None  # collect(run): every block into done at once (no block futures)

    def result(self):
        if self.futures and self.collect is not None:
            self.collect(self)
            if self.checkpoint is not None:
                for b in self.futures:
                    _save(self.checkpoint, self.token, b, self.on_host(b))
        elif self.futures:
            from distributed import as_completed
            blocks = {f.key: b for b, f in self.futures.items()}
            # with_results: each block's answer is fetched as soon as it is done, several at
            # once from their workers, instead of one after another here
            for fut, value in as_completed(list(self.futures.values()), with_results=True):
                b = blocks[fut.key]
                self.done[b] = value
                if self.checkpoint is not None:
                    _save(self.checkpoint, self.token, b, self.on_host(b))
        if self.to_device:
            return self.assemble([self.on_device(b) for b in sorted(self.done)])
        return self.assemble([self.on_host(b) for b in sorted(self.done)])

    def on_host(self, b: int):
        """Block b's answer as host arrays (one left on a worker's GPU, :class:`.ipc.Lists`,
        is copied from there: mapped here when this process can, else read by its worker)."""
        value = self.done[b]
        if isinstance(value, tuple) and tasks.on_device(value[0]):  # merged on this GPU
            return tasks.host(value[0]), tasks.host(value[1])
        if not isinstance(value, Lists):
            return value
        try:
            return tasks.lists_to_host(value)
        except Unreachable:
            return self.client.submit(tasks.lists_to_host, self.futures[b], pure=True).result()

    def on_device(self, b: int):
        """Block b's answer as CuPy arrays on this process's current GPU: a worker's
        :class:`.ipc.Lists` copied GPU to GPU where it can be mapped, else through the host."""
        import cupy
        value = self.done[b]
        if isinstance(value, Lists):
            try:
                return value.rows(0, value.shape[0])
            except Unreachable:
                value = self.on_host(b)
        return cupy.asarray(value[0]), cupy.asarray(value[1])


def _start(client, kind, Q, I, metric, params, extra, checkpoint, submit_block, assemble) -> Run:
    token = _run_token(kind, Q, I, metric, params, extra)
    if checkpoint is not None:
        os.makedirs(checkpoint, exist_ok=True)
    done, futures = {}, {}
    for b in range(Q.n_partitions):
        saved = _load(checkpoint, token, b)
        if saved is not None:
            done[b] = saved
        else:
            futures[b] = submit_block(b)
    return Run(client, futures, done, token, checkpoint, assemble, sorted(done))


# ---------------------------------------------------------------------------
# kNN
# ---------------------------------------------------------------------------


def knn_submit(X, Y=None, k: int = 5, metric="euclidean", *, client=None, exclude_self=None,
               symmetric=None, partition_rows=None, n_partitions=None, backend="auto",
               working_memory=None, checkpoint=None, to_device=False, **params) -> Run:
    """Submit a distributed kNN and return its :class:`Run` (see :func:`knn`)."""
    client = _client(client)
    if to_device:
        _check_cupy()
    if exclude_self is None:
        exclude_self = Y is None
    if isinstance(X, replicas.Replicated):
        return _replicated_knn(X, Y, k, metric, params, client, bool(exclude_self), symmetric,
                               backend, working_memory, checkpoint, bool(to_device))
    Qp = partition(X, client, partition_rows, n_partitions)
    Ip = Qp if Y is None else partition(Y, client, partition_rows, n_partitions)
    if Ip.n_features != Qp.n_features:
        raise InputError("X and Y must have the same number of columns",
                         got=f"{Qp.n_features} and {Ip.n_features}")
    self_join = Ip is Qp
    params = whole_data_params(metric, params, X, Y, Qp, Ip, client)
    need = _check_k(k, Ip.n_rows, bool(exclude_self))
    sym = _use_symmetric(symmetric, self_join, metric, params)
    common = (metric, params, backend, working_memory)
    # the accuracy rule decided once, from every block (bit for bit gb.knn's decision)
    device = backend == "cuda" or client.submit(tasks.on_device, Ip.futures[0], pure=True).result()
    choice = accuracy.decide(client, metric, params, Qp, Ip, device)
    Qo, Io = Qp.offsets, Ip.offsets
    both: dict = {}

    def pair(r, c):  # a symmetric block pair (r < c), submitted once for both blocks
        if (r, c) not in both:
            both[r, c] = client.submit(tasks.pair_symmetric, Qp.futures[r], Qp.futures[c],
                                       need, int(Qo[r]), int(Qo[c]), *common, choice,
                                       pure=True)
        return both[r, c]

    def submit_block(b):
        if sym:
            leaves = [client.submit(tasks.pair_knn, Qp.futures[b], Qp.futures[b], need,
                                    int(Qo[b]), *common, None, choice, pure=True)]
            leaves += [client.submit(tasks.part, pair(r, b), 1, pure=True) for r in range(b)]
            leaves += [client.submit(tasks.part, pair(b, c), 0, pure=True)
                       for c in range(b + 1, Qp.n_partitions)]
        else:
            leaves = [client.submit(tasks.pair_knn, Qp.futures[b], Ip.futures[c], need,
                                    int(Io[c]), *common, False, choice, pure=True)
                      for c in range(Ip.n_partitions)]
        return _tree(client, leaves, need, lambda level: client.submit(
            tasks.finish, int(k), bool(exclude_self), int(Qo[b]), *level, pure=True))

    extra = (int(k), bool(exclude_self), sym)
    run = _start(client, "knn", Qp, Ip, metric, params, extra, checkpoint, submit_block,
                 _widened)
    run.to_device = bool(to_device)
    run.partitions = (Qp, Ip)
    run.symmetric = sym
    run.pair_tasks = len(both) + len(run.futures) if sym else len(run.futures) * Ip.n_partitions
    return run


def _replicated_knn(R, Y, k, metric, params, client, exclude_self, symmetric, backend,
                    working_memory, checkpoint, to_device: bool = False) -> Run:
    """A self-join over a replicated index: each worker searches a share of the tiles."""
    if Y is not None and Y is not R:
        raise InputError("a replicated index is searched as a self-join", got="an explicit Y",
                         hint="call knn(R) with Y=None, or partition() X and Y instead")
    need = _check_k(k, R.n_rows, exclude_self)
    sym = _use_symmetric(symmetric, True, metric, params)
    common = (metric, params, backend, working_memory, sym)
    extra = (int(k), exclude_self, sym, "replicated")
    rows = replicas.blocks(R)
    lists = to_device and R.on_device and os.environ.get("GBDIST_DASK_IPC") != "0"
    submit_block, collect = replicas.knn_blocks(R, k, need, exclude_self, common, client, lists)
    run = _start(client, "knn", rows, rows, metric, params, extra, checkpoint, submit_block,
                 _widened)
    run.collect = collect
    run.symmetric = sym
    run.to_device = to_device
    run.pair_tasks = len(R.futures) if run.futures else 0
    return run


def _widened(blocks):
    """The row blocks' (distances, indices) as one answer, the indices (moved as int32 where
    they fit) widened to int64 as they are copied: one pass over the answer, not two. Where
    the blocks are (NumPy, or CuPy for ``to_device``)."""
    n = sum(len(b[0]) for b in blocks)
    xp = tasks._xp(blocks[0][0])
    d = xp.empty((n,) + blocks[0][0].shape[1:], dtype=blocks[0][0].dtype)
    i = xp.empty((n,) + blocks[0][1].shape[1:], dtype=np.int64)
    a = 0
    for bd, bi in blocks:
        d[a:a + len(bd)] = bd
        i[a:a + len(bi)] = bi
        a += len(bd)
    return d, i


def knn(X, Y=None, k: int = 5, metric="euclidean", *, client=None, exclude_self=None,
        symmetric=None, partition_rows=None, n_partitions=None, backend="auto",
        working_memory=None, checkpoint=None, to_device=False, **params):
    """For each row of X, the k nearest rows of Y (of X when Y is None), on a Dask cluster.

    Same answer as ``gbdist.knn(X, Y, k, metric, **params)``, bit for bit: ``(distances,
    indices)`` of shape (n_X, k), rows sorted by (distance, index), int64 indices; in a
    self-join (Y None) each row is left out of its own list unless ``exclude_self=False``.

    ``X``, ``Y``: SciPy/CuPy sparse matrices (cut into ``partition_rows``-row blocks, or
    ``n_partitions`` blocks), Dask arrays of sparse blocks (their row chunks are the
    partitions), or :class:`Partitions` from :func:`partition` (reused as they are).
    X may also be a :class:`Replicated` index (:func:`replicate`: the whole matrix on every
    worker; Y None): each worker then runs an equal share of the single-device search's
    tiles and only the n × k lists move — the fast layout whenever the index fits a worker.
    ``symmetric``: as gb.knn's: in a self-join under a metric proven symmetric each
    unordered block pair is computed once. ``backend``, ``working_memory``: for the
    single-device gbdist each task runs. ``checkpoint``: a directory; each finished query
    block is saved there, and a later call with the same inputs and parameters loads those
    blocks instead of computing them (resuming a run that was killed). ``to_device``: the
    answer as CuPy arrays on this process's current GPU, as ``gb.knn`` gives it for device
    input; from a device :class:`Replicated` index whose workers share this host, each
    block goes GPU to GPU (CUDA IPC, :mod:`.ipc`), else through the host.
    """
    return knn_submit(X, Y, k, metric, client=client, exclude_self=exclude_self,
                      symmetric=symmetric, partition_rows=partition_rows,
                      n_partitions=n_partitions, backend=backend, working_memory=working_memory,
                      checkpoint=checkpoint, to_device=to_device, **params).result()


# ---------------------------------------------------------------------------
# radius queries and generic reductions
# ---------------------------------------------------------------------------


def radius_submit(X, Y=None, radius=1.0, metric="euclidean", *, client=None, exclude_self=None,
                  sort_results=False, partition_rows=None, n_partitions=None, backend="auto",
                  working_memory=None, checkpoint=None, **params) -> Run:
    """Submit a distributed radius search; ``result()`` is (data, indices, indptr) of the
    CSR of distances <= radius (see :func:`radius_neighbors`)."""
    if isinstance(radius, bool) or not isinstance(radius, numbers.Real) or np.isnan(radius):
        raise InputError("radius must be a number", got=repr(radius))
    client = _client(client)
    if exclude_self is None:
        exclude_self = Y is None
    Qp = partition(X, client, partition_rows, n_partitions)
    Ip = Qp if Y is None else partition(Y, client, partition_rows, n_partitions)
    params = whole_data_params(metric, params, X, Y, Qp, Ip, client)
    common = (metric, params, backend, working_memory)

    def submit_block(b):
        parts = [client.submit(tasks.pair_radius, Qp.futures[b], Ip.futures[c], radius,
                               *common, pure=True)
                 for c in range(Ip.n_partitions)]
        return client.submit(tasks.finish_radius, int(Qp.offsets[b]), bool(exclude_self),
                             bool(sort_results), *parts, pure=True)

    def assemble(blocks):
        data = np.concatenate([x[0] for x in blocks])
        ind = np.concatenate([x[1] for x in blocks])
        counts = np.concatenate([np.diff(x[2]) for x in blocks])
        indptr = np.zeros(counts.size + 1, dtype=np.int64)
        np.cumsum(counts, out=indptr[1:])
        return data, ind, indptr

    extra = (float(radius), bool(exclude_self), bool(sort_results))
    return _start(client, "radius", Qp, Ip, metric, params, extra, checkpoint, submit_block,
                  assemble)


def _object_rows(values, indptr):
    out = np.empty(len(indptr) - 1, dtype=object)
    out[:] = [values[indptr[q]:indptr[q + 1]] for q in range(len(indptr) - 1)]
    return out


def radius_neighbors(X, Y=None, radius=1.0, metric="euclidean", *, client=None,
                     return_distance=True, sort_results=False, **kw):
    """For each row of X, the rows of Y (of X, itself left out) at distance <= radius, as
    scikit-learn's object arrays of arrays; index order unless ``sort_results``."""
    if sort_results and not return_distance:
        raise InputError("return_distance must be True if sort_results is True.")
    data, ind, indptr = radius_submit(X, Y, radius, metric, client=client,
                                      sort_results=sort_results, **kw).result()
    if not return_distance:
        return _object_rows(ind, indptr)
    return _object_rows(data, indptr), _object_rows(ind, indptr)


def pairwise_distances_chunked(X, Y=None, *, reduce_func=None, combine=None,
                               metric="euclidean", client=None, partition_rows=None,
                               n_partitions=None, backend="auto", working_memory=None, **params):
    """Yield, per query block (in row order), a reduction of its distance rows.

    Each task computes the distances of one (query block, index block) pair and applies
    ``reduce_func(D, row_start, col_start)`` to them (global offsets); the per-pair results
    of a query block are folded with ``combine(a, b)`` (associative, in a tree) on the
    workers, so only the reductions travel. With ``reduce_func=None`` the blocks are
    joined side by side and each query block's full distance rows are yielded (the one
    mode in which a worker holds whole rows: keep the blocks small).
    """
    if reduce_func is not None and not callable(reduce_func):
        raise ParameterError("reduce_func must be a callable or None", got=repr(reduce_func))
    if reduce_func is not None and not callable(combine):
        raise ParameterError("a reduce_func needs combine(a, b), which folds the results of "
                             "two index blocks", got=repr(combine),
                             hint="e.g. combine=numpy.add for counts, or numpy.minimum")
    client = _client(client)
    Qp = partition(X, client, partition_rows, n_partitions)
    Ip = Qp if Y is None else partition(Y, client, partition_rows, n_partitions)
    params = whole_data_params(metric, params, X, Y, Qp, Ip, client)
    common = (metric, params, backend, working_memory)
    finals = []
    for b in range(Qp.n_partitions):
        parts = [client.submit(tasks.pair_reduce, Qp.futures[b], Ip.futures[c],
                               int(Qp.offsets[b]), int(Ip.offsets[c]), reduce_func, *common,
                               pure=True)
                 for c in range(Ip.n_partitions)]
        if reduce_func is None:
            finals.append(client.submit(tasks.hstack_task, *parts, pure=True))
            continue
        while len(parts) > 1:
            parts = [client.submit(tasks.combine_task, combine, *parts[a:a + FAN_IN], pure=True)
                     for a in range(0, len(parts), FAN_IN)]
        finals.append(parts[0])
    return _yield(finals)


def _yield(finals):
    for fut in finals:
        yield fut.result()
        fut.release()
