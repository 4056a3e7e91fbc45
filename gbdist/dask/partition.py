"""Row partitions living on the workers: made once, reused by every query batch.

A :class:`Partitions` is a list of Dask futures, one per row block, plus the blocks'
global row offsets. Holding it keeps the blocks in the workers' memory (Dask's
``persist``); dropping it frees them.

Where the blocks come from decides how a lost one comes back:

* a SciPy or CuPy sparse matrix is cut into row blocks by the client, and each block is
  the argument of its task (``tasks.block``): the scheduler keeps that task, so after a
  worker is lost Dask rebuilds the block from it, with no help from the user;
* a Dask array whose blocks are sparse matrices (rows partitioned, one column chunk) keeps
  its own lineage (say, ``from_delayed`` over files): its blocks are persisted as they
  are, and Dask recomputes a lost one from its graph. Nothing passes through the client.
"""
from __future__ import annotations

import numbers
import warnings
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sps

from ..errors import InputError
from . import tasks

DEFAULT_PARTITION_ROWS = 8192


@dataclass(eq=False)
class Partitions:
    """Row blocks of one matrix on the cluster: ``futures[j]`` holds rows
    ``offsets[j]:offsets[j + 1]``; ``n_features`` columns."""

    futures: list
    offsets: np.ndarray
    n_features: int
    source: object = None  # the Dask array or matrix it came from (kept for identity)

    @property
    def n_rows(self) -> int:
        return int(self.offsets[-1])

    @property
    def n_partitions(self) -> int:
        return len(self.futures)

    @property
    def keys(self) -> tuple:
        return tuple(f.key for f in self.futures)


def _is_dask_array(x) -> bool:
    mod = type(x).__module__ or ""
    return mod.startswith("dask.array") and hasattr(x, "to_delayed") and hasattr(x, "chunks")


def _is_sparse(x) -> bool:
    if sps.issparse(x):
        return True
    mod = type(x).__module__ or ""
    return mod.startswith("cupyx.scipy.sparse")


def _row_edges(n: int, partition_rows, n_partitions) -> np.ndarray:
    if partition_rows is not None and n_partitions is not None:
        raise InputError("give partition_rows or n_partitions, not both",
                         got=f"partition_rows={partition_rows!r}, n_partitions={n_partitions!r}")
    if n_partitions is not None:
        if (isinstance(n_partitions, bool) or not isinstance(n_partitions, numbers.Integral)
                or n_partitions < 1):
            raise InputError("n_partitions must be a positive integer", got=repr(n_partitions))
        return np.linspace(0, n, min(int(n_partitions), max(n, 1)) + 1).round().astype(np.int64)
    rows = DEFAULT_PARTITION_ROWS if partition_rows is None else partition_rows
    if isinstance(rows, (list, tuple, np.ndarray)):  # explicit, uneven sizes
        sizes = np.asarray(rows, dtype=np.int64)
        if sizes.ndim != 1 or (sizes < 1).any() or int(sizes.sum()) != n:
            raise InputError("partition_rows as a list gives each partition's row count",
                             expected=f"positive counts summing to {n}", got=repr(rows))
        return np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    if isinstance(rows, bool) or not isinstance(rows, numbers.Integral) or rows < 1:
        raise InputError("partition_rows must be a positive integer (or a list of sizes)",
                         got=repr(rows))
    return np.unique(np.append(np.arange(0, n, int(rows), dtype=np.int64), n))


def partition(X, client, partition_rows=None, n_partitions=None) -> Partitions:
    """Put the rows of X on the cluster in blocks (see the module docstring).

    ``X``: a SciPy/CuPy sparse matrix (or array), a dense NumPy array, a Dask array whose
    blocks are such matrices, or :class:`Partitions` (returned unchanged).
    ``partition_rows``: rows per block (an int, or a list of block sizes); or
    ``n_partitions`` blocks of near-equal size. A Dask array keeps its own row chunks.
    """
    if isinstance(X, Partitions):
        return X
    if _is_dask_array(X):
        if X.ndim != 2:
            raise InputError("a Dask array input must be 2-D", got=f"shape {X.shape}")
        if len(X.chunks[1]) != 1:
            X = X.rechunk({1: -1})
        sizes = np.asarray(X.chunks[0], dtype=np.float64)
        if np.isnan(sizes).any():
            raise InputError("the Dask array's row chunks must be known",
                             hint="call X.compute_chunk_sizes() first")
        blocks = list(X.to_delayed().ravel())
        futures = client.compute(blocks)
        offsets = np.concatenate([[0], np.cumsum(sizes.astype(np.int64))]).astype(np.int64)
        return Partitions(list(futures), offsets, int(X.shape[1]), X)
    shape = getattr(X, "shape", None)
    if shape is None or len(shape) != 2:
        raise InputError("X must be a 2-D matrix, a Dask array of sparse blocks, or Partitions",
                         got=f"{type(X).__name__} of shape {shape}")
    if _is_sparse(X):
        Xr = X.tocsr()
    else:
        Xr = np.asarray(X)
    edges = _row_edges(int(shape[0]), partition_rows, n_partitions)
    futures = []
    with warnings.catch_warnings():  # the blocks are the tasks' inputs, on purpose
        warnings.filterwarnings("ignore", message=".*Large object.*")
        warnings.filterwarnings("ignore", message=".*large graph.*")
        for a, b in zip(edges[:-1], edges[1:]):
            futures.append(client.submit(tasks.block, Xr[int(a):int(b)], pure=True))
    return Partitions(futures, edges, int(shape[1]), X)


def to_device(parts: Partitions, client) -> Partitions:
    """The same partitions as CuPy CSR matrices on each worker's GPU (made on the workers,
    so nothing passes through the client; a lost one is rebuilt from its host block).
    Tasks on device partitions run gbdist's CUDA backend and send back only their lists."""
    futures = client.map(tasks.to_device, parts.futures, pure=True)
    return Partitions(list(futures), parts.offsets, parts.n_features, parts.source)
