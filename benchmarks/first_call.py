"""Time the first call of built-in metrics in a fresh process (compilation included).

Run twice: with an empty gbdist cache folder (cold: NVRTC compiles)
and again with the same directory (warm: the compiled kernels are loaded from
disk). Prints one line per metric: first call, second call (ms).

    GBDIST_CACHE_DIR=$(mktemp -d) python benchmarks/first_call.py
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sps

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main() -> int:
    t0 = time.perf_counter()
    import cupy
    import gbdist as gb
    cupy.zeros(1).sum()
    print(f"import + CUDA context: {(time.perf_counter() - t0) * 1e3:.0f} ms")
    X = sps.random(2000, 5000, density=0.01, format="csr", random_state=0, dtype=np.float32)
    Xg = cupy.sparse.csr_matrix(X) if hasattr(cupy, "sparse") else X
    import cupyx.scipy.sparse as cps
    Xg = cps.csr_matrix(X)
    for metric in ("cosine", "euclidean", "manhattan", "chebyshev", "canberra", "jensenshannon"):
        times = []
        for _ in range(2):
            t = time.perf_counter()
            gb.pairwise_distances(Xg, Xg, metric=metric, backend="cuda")
            cupy.cuda.runtime.deviceSynchronize()
            times.append((time.perf_counter() - t) * 1e3)
        print(f"{metric:<14} first {times[0]:8.1f} ms   second {times[1]:8.2f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
