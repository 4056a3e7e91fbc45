"""The whole index on every worker, each worker searching an equal share of the tiles.

When the index fits one worker's memory (one GPU's, say), the fastest distributed kNN is
the single-device search itself, split: every worker holds the whole matrix (stacked
from the partitions once, on the worker, like a fitted index) and runs the very tile
loop of ``gb.knn`` — the symmetric self-join's square tiles on and above the diagonal,
fused top-k, all of it — but computes only its share of the tiles
(:func:`gbdist.neighbors.knn_plan`'s ``share``: at least 8 tiles per share, smaller
than ``gb.knn``'s where it has few, so the shares come out even). Each worker keeps n × (k + 1)
candidate lists on its device; worker j merges rows j/W..(j+1)/W of every worker's lists
by (distance, index) and drops each query's own index there (a reduce-scatter: the
transfers run in parallel, and each worker sends the client only its rows); for an
answer on the client's GPU from workers on its host, the client merges them all instead
(:func:`_knn_client_merge`). Only the
lists move: GPU to GPU through CUDA IPC when the workers share a host (:mod:`.ipc`),
through Dask's own transfers otherwise. Every pair's distance is computed alone, whatever tile holds it, and the
lists merge in a total order, so the answer is ``gb.knn``'s bit for bit on the GPU.

The partitioned layout (:mod:`.search`: block-pair tasks) remains for an index larger
than one worker can hold; a replica needs the whole index on each worker.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field

import numpy as np

from ..errors import InputError
from . import accuracy, tasks
from .partition import Partitions, partition


@dataclass(eq=False)
class Replicated:
    """One copy of the whole matrix per worker: ``futures[j]`` lives on ``workers[j]``."""

    futures: list
    workers: list
    n_rows: int
    n_features: int
    token: str
    on_device: bool = False
    decisions: dict = field(default_factory=dict)  # pruned search? per metric and parameters
    choices: dict = field(default_factory=dict)  # the accuracy decision, per metric and parameters

    @property
    def keys(self) -> tuple:
        return tuple(f.key for f in self.futures)


WAIT_FOR_WORKERS_S = 10.0
"""How long :func:`replicate` waits for a worker when the client lists none."""


def _workers(client, workers) -> list:
    if workers is not None:
        return list(workers)
    found = sorted(client.scheduler_info()["workers"])
    if not found:  # a cluster just started (or a lost worker being replaced) may not list
        try:  # its workers yet: wait for one before saying there is none
            client.wait_for_workers(1, timeout=WAIT_FOR_WORKERS_S)
        except TimeoutError:
            pass
        found = sorted(client.scheduler_info()["workers"])
    if not found:
        raise InputError("the cluster has no worker", hint="start the workers first")
    return found


def replicate(X, client, *, device: bool = False, workers=None) -> Replicated:
    """The whole of X (a matrix, a Dask array of row blocks, or :class:`Partitions`) stacked
    on every worker (or on ``workers``), as a CuPy CSR on its GPU when ``device``.

    The copies are built on the workers from the partitions (a lost worker's copy is
    rebuilt elsewhere from them). Pass the result to :func:`gbdist.dask.knn` as X: each
    worker then searches an equal share of the tiles. Each worker must hold the whole
    matrix; for larger indexes use :func:`partition` (the block-pair layout)."""
    from dask.base import tokenize
    parts = X if isinstance(X, Partitions) else partition(X, client)
    where = _workers(client, workers)
    token = tokenize("gbdist-replica", parts.keys, tuple(parts.offsets), bool(device))
    futures = [client.submit(tasks.stack, bool(device), *parts.futures,
                             key=f"gbdist-replica-{token}-{j}", workers=[w],
                             allow_other_workers=True, pure=False)
               for j, w in enumerate(where)]
    return Replicated(futures, where, parts.n_rows, parts.n_features, token, bool(device))


class _Blocks:
    """The run's query blocks as :func:`.search._start` reads a partitioning: one row range
    per worker, each merged on its worker (a reduce-scatter: every worker sends the others
    the rows they merge, and every worker sends the client only its own rows)."""

    def __init__(self, R: Replicated):
        W = len(R.futures)
        self.offsets = np.linspace(0, R.n_rows, W + 1).round().astype(np.int64)
        self.keys = tuple(f"{R.token}-{j}" for j in range(W))
        self.n_partitions = W


def blocks(R: Replicated) -> _Blocks:
    return _Blocks(R)


def knn_blocks(R: Replicated, k: int, need: int, exclude_self: bool, common: tuple, client,
               lists: bool = False):
    """``(submit_block, collect)`` for the run. ``submit_block(b)``: the shares (one task
    per worker, submitted once, on the first block asked for), then block b's rows of every
    share merged on worker b. ``lists``: the answer wanted on this process's GPU
    (:func:`gbdist.dask.search.knn`'s ``to_device``): each block left on its worker's GPU
    as :class:`.ipc.Lists`, or, where the workers share this host, no merge tasks at all:
    ``collect(run)`` maps every share here and merges them on this GPU, filling
    ``run.done`` (:func:`_knn_client_merge`). ``collect`` is None where the run gathers
    its blocks' futures as they finish."""
    common = common + (_choice(R, common, client),)
    if _prunes(R, common, client):
        return _knn_blocks_pruned(R, k, need, exclude_self, common, client, lists), None
    if peer_to_peer(R) and lists and os.environ.get("GBDIST_DASK_CLIENT_MERGE") != "0":
        return _knn_client_merge(R, k, need, exclude_self, common, client)
    if peer_to_peer(R):
        return _knn_blocks_ipc(R, k, need, exclude_self, common, client, lists), None
    edges = _Blocks(R).offsets
    shares: list = []

    def submit_block(b: int):
        if not shares:
            shares.extend(_shares(R, tasks.share_knn, need, common, client))
        a, z = int(edges[b]), int(edges[b + 1])
        rows = [client.submit(tasks.rows_of, s, a, z, workers=[w], allow_other_workers=True,
                              pure=True) for s, w in zip(shares, R.workers)]
        return client.submit(tasks.merge_shares, int(k), bool(exclude_self), need, *rows,
                             row0=a, lists=lists, workers=[R.workers[b]],
                             allow_other_workers=True, pure=True)

    return submit_block, None


def _shares(R: Replicated, task, need: int, common: tuple, client) -> list:
    """One share task per worker, on that worker's replica (share j of W). Their keys
    come from one token of what they all share (what ``pure=True`` would hash W times, a
    third of submitting them), so a run asked again finds the same tasks."""
    from dask.base import tokenize
    from dask.utils import funcname
    W = len(R.futures)
    token = tokenize(R.keys, need, W, common)
    return [client.submit(task, f, need, j, W, *common, key=f"{funcname(task)}-{token}-{j}",
                          workers=[w], allow_other_workers=True)
            for j, (f, w) in enumerate(zip(R.futures, R.workers))]


def peer_to_peer(R: Replicated) -> bool:
    """Whether the shares' lists go GPU to GPU (:mod:`.ipc`): device replicas, several
    workers, all on one host, and ``GBDIST_DASK_IPC`` not set to 0."""
    from .ipc import same_host
    return (R.on_device and len(R.futures) > 1 and os.environ.get("GBDIST_DASK_IPC") != "0"
            and same_host(R.workers))


def _knn_blocks_ipc(R: Replicated, k: int, need: int, exclude_self: bool, common: tuple,
                    client, lists: bool = False):
    """:func:`knn_blocks` with the lists mapped GPU to GPU: each share stays whole on its
    worker, and worker b copies rows b of every share straight from the other GPUs."""
    W = len(R.futures)
    edges = _Blocks(R).offsets
    shares: list = []

    def submit_block(b: int):
        if not shares:
            shares.extend(_shares(R, tasks.share_lists, need, common, client))
        a, z = int(edges[b]), int(edges[b + 1])
        return client.submit(tasks.merge_lists, int(k), bool(exclude_self), need, a, z,
                             R.futures[b], W, common, *shares, out_lists=lists,
                             workers=[R.workers[b]], allow_other_workers=True, pure=True)

    return submit_block


def _knn_client_merge(R: Replicated, k: int, need: int, exclude_self: bool, common: tuple,
                      client):
    """The answer to this process's GPU with no merge tasks: every share stays whole on its
    worker's GPU (:class:`.ipc.Lists`), and this process maps each one as it finishes
    (CUDA IPC; the copy of one overlaps the shares still running) and merges them all on
    its own GPU. What the worker-side merge cost after the last share (a second layer of
    tasks, each fetching the other shares' handles from their workers, then a second export)
    goes: 20 ms of a 280 ms search on four H200s (docs/distributed.md). Each block's future
    is its worker's share. Where a share cannot be mapped here (its worker died since, this
    process on another host), the workers merge instead (:func:`_knn_blocks_ipc`'s tasks,
    which recompute what they cannot map): the same answer."""
    edges = _Blocks(R).offsets
    shares: list = []

    def submit_block(b: int):
        if not shares:
            shares.extend(_shares(R, tasks.share_lists, need, common, client))
        return shares[b]

    def collect(run) -> None:
        """Every block of ``run.futures`` into ``run.done``: (CuPy distances, int64
        indices) on this GPU, or, after the fallback, the workers' merged
        :class:`.ipc.Lists` (``run.futures`` then holds the merge tasks)."""
        from distributed import as_completed

        from .ipc import Unreachable
        where = {f.key: w for w, f in enumerate(shares)}
        parts: list = [None] * len(shares)
        try:
            for fut, lists in as_completed(list(shares), with_results=True):
                parts[where[fut.key]] = lists.rows(0, lists.shape[0])
        except Unreachable:
            merge = _knn_blocks_ipc(R, k, need, exclude_self, common, client, True)
            run.futures.update({b: merge(b) for b in run.futures})
            run.done.update(zip(run.futures, client.gather(list(run.futures.values()))))
            return
        d, i = tasks.merged(k, exclude_self, need, *parts)
        for b in run.futures:
            a, z = int(edges[b]), int(edges[b + 1])
            run.done[b] = (d[a:z], i[a:z])

    return submit_block, collect


def _choice(R: Replicated, common: tuple, client):
    """The accuracy decision of gb.knn on the whole index (:func:`.accuracy.whole`, from the
    worker's whole replica: no share or row block gathers statistics of its own), asked of
    one worker once per metric and parameters and kept with the replica, as :func:`_prunes`
    is."""
    from dask.base import tokenize
    metric, params = common[:2]
    key = tokenize("accuracy", repr(metric), params)
    if key not in R.choices:
        R.choices[key] = client.submit(
            accuracy.whole, R.futures[0], metric, params, workers=[R.workers[0]],
            allow_other_workers=True, pure=True).result()
    return R.choices[key]


def _prunes(R: Replicated, common: tuple, client) -> bool:
    """Whether gb.knn on the whole index takes the pruned search (asked of one worker once
    per metric and parameters, then kept with the replica: the index does not change)."""
    from dask.base import tokenize
    metric, params, backend, working_memory, _sym, choice = common
    key = tokenize(repr(metric), params, backend, working_memory)
    if key not in R.decisions:
        R.decisions[key] = client.submit(
            tasks.prunes, R.futures[0], metric, params, backend, working_memory, choice,
            workers=[R.workers[0]], allow_other_workers=True, pure=True).result()
    return R.decisions[key]


def _knn_blocks_pruned(R: Replicated, k: int, need: int, exclude_self: bool, common: tuple,
                       client, lists: bool = False):
    """:func:`knn_blocks` when the pruned search runs (:mod:`gbdist.neighbors.pruned`): its
    cost is per query row, so worker b searches rows b of the whole replica and its lists
    are final; nothing is merged and only the answer moves."""
    edges = _Blocks(R).offsets
    metric, params, backend, working_memory, _sym, choice = common

    def submit_block(b: int):
        a, z = int(edges[b]), int(edges[b + 1])
        return client.submit(tasks.rows_knn, R.futures[b], need, a, z, int(k),
                             bool(exclude_self), metric, params, backend, working_memory,
                             lists, choice, workers=[R.workers[b]], allow_other_workers=True,
                             pure=True)

    return submit_block
