"""Thread scaling of the compiled CPU graph kernels on an idle machine (no peers needed:
SciPy only), for checking the 2-core numbers of graph_cpu_kernels.py without the load of
other processes. Run pinned, e.g. ``taskset -c 0,1 python benchmarks/graph_cpu_scaling.py``.
Prints medians (ms) for 1 and 2 threads; results checked against SciPy first."""
from __future__ import annotations

import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sps

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.graphs import power_law_graph  # noqa: E402


def med(fn, repeat=7):
    fn()
    ts = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts) * 1e3


def main():
    from gbdist.algebra.semirings import semirings as S
    from gbdist.backends.compiled.graph import CompiledGraphKernels
    K = CompiledGraphKernels()
    for n in [int(v) for v in (sys.argv[1:] or ["100000", "1000000"])]:
        A = power_law_graph(n, seed=1)
        x = np.random.default_rng(2).random(n)
        y, _ = K.spmv(A, x, None, S.plus_times, out_dtype=np.float64)
        assert np.allclose(y, A @ x)
        L = sps.tril(A, k=-1).tocsr()
        LT = L.T.tocsr()
        LT.sort_indices()
        tri = K.spgemm(L, LT, S.plus_pair, mask=L, out_dtype=np.int64)
        if n <= 100000:
            P = A.copy()
            P.data[:] = 1.0
            assert int(tri.sum()) == int(round((P @ P).multiply(P).sum() / 6))
        row = {"scipy A@x": med(lambda: A @ x)}
        for t in (1, 2):
            os.environ["GBDIST_NUM_THREADS"] = str(t)
            row[f"plus_times mxv t={t}"] = med(
                lambda: K.spmv(A, x, None, S.plus_times, out_dtype=np.float64))
            row[f"min_plus mxv t={t}"] = med(
                lambda: K.spmv(A, x, None, S.min_plus, out_dtype=np.float64))
            row[f"triangles <L> t={t}"] = med(
                lambda: K.spgemm(L, LT, S.plus_pair, mask=L, out_dtype=np.int64), 3)
        if n <= 30000:
            row["scipy A@A"] = med(lambda: A @ A, 3)
            for t in (1, 2):
                os.environ["GBDIST_NUM_THREADS"] = str(t)
                row[f"plus_times A@A t={t}"] = med(
                    lambda: K.spgemm(A, A, S.plus_times, out_dtype=np.float64), 3)
        print(n, A.nnz, {k: round(v, 2) for k, v in row.items()}, flush=True)


if __name__ == "__main__":
    main()
