"""What issue 28's known symmetry saves on jaccard / cosine (helper hC4, 2026-11-28): on the
power law 10⁶ (1.87·10⁷ entries, from ``GRAPH_DIR`` as ``cpu2-2026-11-27f-graph-memory.py``
keeps it), in one process at ``GBDIST_NUM_THREADS`` threads, on one ``gb.Matrix`` M: a first
call (kernels load, M's pattern checked once), then PAIRS interleaved pairs of calls "known"
(this branch: P carries M's symmetry, the masked product's check skipped) and "unknown" (the
same call with the compiled half product handed ``known=None``: P's check paid, as before
this branch). Every call's time and the time spent in the compiled symmetry check
(``graph_symmetry.symmetric``) are printed as JSON lines, with the 1-minute load average.

    GRAPH_DIR=DIR python benchmarks/results/cpu2-2026-11-28-hC4-check.py jaccard 1 2
    (operation, threads, pairs)
"""
import json
import os
import sys
import time
from pathlib import Path

os.environ["GBDIST_NUM_THREADS"] = sys.argv[2]
os.environ.setdefault("GBDIST_GRAPH_AUTO_DEVICE", "0")
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import scipy.sparse as sps  # noqa: E402

import gbdist as gb  # noqa: E402
from gbdist import algorithms as alg  # noqa: E402
from gbdist.backends.compiled import graph_masked as gm  # noqa: E402
from gbdist.backends.compiled import graph_symmetry as gs  # noqa: E402

spent = []
_real_check, _real_half = gs.symmetric, gm.half_product


def _timed_check(*a, **k):
    t = time.perf_counter()
    r = _real_check(*a, **k)
    spent.append(time.perf_counter() - t)
    return r


def _unknown_half(*a, **k):
    k["known"] = None
    return _real_half(*a, **k)


def main():
    op, pairs = sys.argv[1], int(sys.argv[3])
    A = sps.load_npz(Path(os.environ["GRAPH_DIR"]) / "power_law-1.7e+07.npz").tocsr()
    M = gb.Matrix(A)
    fn = getattr(alg, op)
    gs.symmetric = _timed_check

    def call(mode):
        gm.half_product = _unknown_half if mode == "unknown" else _real_half
        del spent[:]
        l0 = os.getloadavg()[0]
        t = time.perf_counter()
        fn(M)
        print(json.dumps(dict(op=op, threads=int(sys.argv[2]), mode=mode,
                              s=time.perf_counter() - t, checks=len(spent),
                              check_s=sum(spent), load_before=l0,
                              load_after=os.getloadavg()[0])), flush=True)
    call("first")
    for k in range(pairs):
        for mode in (("known", "unknown") if k % 2 == 0 else ("unknown", "known")):
            call(mode)


if __name__ == "__main__":
    main()
