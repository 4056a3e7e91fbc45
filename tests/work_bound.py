"""Bounding the work of a call without a clock (a loaded machine makes any wall-clock
bound flaky): the symbolic steps it starts (each one is interrupted by the analysis's own
budget, gbdist.algebra.proofs.budget) and the memory it allocates at its peak
(tracemalloc). A blow-up, a hang in a loop of sympy calls or a formula written out 2^20
times shows in one or the other."""
from __future__ import annotations

import contextlib
import sys
import tracemalloc
from dataclasses import dataclass

MIB = 2**20


@dataclass
class Work:
    steps: int = 0  # symbolic steps started (entries into proofs.budget)
    peak: int = 0  # bytes allocated at the peak (tracemalloc)


@contextlib.contextmanager
def bounded(max_steps: int, max_mib: float):
    """Run the enclosed block counting its symbolic steps and its peak allocation; assert
    both stay within the bounds when it ends (normally or by an exception)."""
    from gbdist.algebra import proofs
    original = proofs.budget
    work = Work()

    @contextlib.contextmanager
    def counting(*args, **kwargs):
        work.steps += 1
        with original(*args, **kwargs):
            yield

    patched = [m for m in list(sys.modules.values())
               if getattr(m, "__name__", "").startswith("gbdist")
               and getattr(m, "budget", None) is original]
    for m in patched:
        m.budget = counting
    was_tracing = tracemalloc.is_tracing()
    if not was_tracing:
        tracemalloc.start()
    tracemalloc.reset_peak()
    try:
        yield work
    finally:
        work.peak = tracemalloc.get_traced_memory()[1]
        if not was_tracing:
            tracemalloc.stop()
        for m in patched:
            m.budget = original
        assert work.steps <= max_steps, f"{work.steps} symbolic steps (at most {max_steps})"
        assert work.peak <= max_mib * MIB, \
            f"peak allocation {work.peak / MIB:.1f} MiB (at most {max_mib} MiB)"
