"""The thread pool the compiled kernels run on (no Numba here: imported by every module
of the compiled backend, so that none of them imports the package ``__init__``).

Each kernel processes a range of output rows ``[r0, r1)`` and is run over blocks of
rows, about four blocks per thread; the kernels release the GIL.
"""
from __future__ import annotations

import os

import numpy as np


def threads() -> int:
    """Threads the kernels run on: ``GBDIST_NUM_THREADS``, else ``NUMBA_NUM_THREADS``,
    else the cores this process may run on."""
    for var in ("GBDIST_NUM_THREADS", "NUMBA_NUM_THREADS"):
        v = os.environ.get(var)
        if v and v.isdigit() and int(v) > 0:
            return int(v)
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


_POOL: dict = {}


def _pool(n: int):
    """A pool of ``n`` threads, per process (a forked child does not inherit the threads)."""
    from concurrent.futures import ThreadPoolExecutor
    key = (os.getpid(), n)
    pool = _POOL.get(key)
    if pool is None:
        pool = _POOL[key] = ThreadPoolExecutor(n, thread_name_prefix="gbdist-cpu")
    return pool


MIN_BLOCK_WORK = 1 << 17  # elementary steps worth a block on the pool (~0.1 ms)


def run_blocks(kernel, head: tuple, m: int, rows: int | None = None,
               work: int | None = None) -> None:
    """Run ``kernel(*head, r0, r1)`` over blocks of output rows on the thread pool (the
    kernels release the GIL), about four blocks per thread for balance.

    ``work``: about how many elementary steps the whole call takes (cells × entries per
    row for a product, entries for a pass over an operand). Blocks are cut no smaller than
    :data:`MIN_BLOCK_WORK` of it, so that small work runs in the calling thread: a pool's
    hand-over costs tens of microseconds per block, more than a small call's kernel."""
    t = threads()
    rows = rows or max(1, min(256, -(-m // (4 * t))))
    if work is not None and m > 0:
        rows = max(rows, -(-MIN_BLOCK_WORK * m // max(int(work), 1)))
    blocks = [(r0, min(m, r0 + rows)) for r0 in range(0, m, rows)]
    if t == 1 or len(blocks) <= 1:
        for r0, r1 in blocks:
            kernel(*head, np.int64(r0), np.int64(r1))
        return
    futures = [_pool(t).submit(kernel, *head, np.int64(r0), np.int64(r1)) for r0, r1 in blocks]
    for f in futures:
        f.result()


def run_queue(work, blocks: list, workers: int) -> None:
    """Run ``work(w, r0, r1)`` for every block, the blocks taken in order from one queue by
    ``workers`` workers (the calling thread is worker 0; worker ``w`` may keep state of
    its own, e.g. partial results it merges afterwards)."""
    if workers <= 1 or len(blocks) <= 1:
        for r0, r1 in blocks:
            work(0, r0, r1)
        return
    import itertools
    import threading
    order = itertools.count()
    lock = threading.Lock()

    def loop(w: int) -> None:
        while True:
            with lock:
                t = next(order)
            if t >= len(blocks):
                return
            work(w, *blocks[t])

    futures = [_pool(workers).submit(loop, w) for w in range(1, workers)]
    loop(0)
    for f in futures:
        f.result()
