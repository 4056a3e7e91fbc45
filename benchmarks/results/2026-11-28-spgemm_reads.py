"""Issue 30: the CUDA SpGEMM A·A (plus_times, power-law graphs of graph_gpu) with its host
reads folded into the bins' two reads, against cuSPARSE in the same process; argv[1]: the
tree to import gbdist from (the base commit's copy, or "."), argv[2]: a label. Answers
checked against cuSPARSE first; cupyx.profiler.benchmark medians of 30."""
import json, os, sys
tree = os.path.abspath(sys.argv[1]); sys.path.insert(0, tree)
import numpy as np, cupy
from cupyx.profiler import benchmark
import gbdist as gb
assert gb.__file__.startswith(tree), gb.__file__
from gbdist.backends.cuda.graph import CudaGraphKernels
from benchmarks.graph_gpu import powerlaw_device, _same_csr
OUT = os.environ.get("OUT", "/tmp")
K = CudaGraphKernels(); sr = gb.semirings
rows = []
for n in (10**4, 10**5, 10**6):
    A = powerlaw_device(n)
    C = K.spgemm(A, A, sr.plus_times, out_dtype=np.float64); _same_csr(C, A @ A)
    r = {"tree": sys.argv[2], "n": n, "nnz": int(A.nnz), "out": int(C.nnz)}
    del C
    reps = 30 if n < 10**6 else 10
    for _ in range(2):  # interleaved, two rounds; the second kept
        for name, f in (("gbdist", lambda: K.spgemm(A, A, sr.plus_times, out_dtype=np.float64)), ("cusparse", lambda: A @ A)):
            b = benchmark(f, n_repeat=reps, n_warmup=3)
            r[name] = {"cpu_ms": float(np.median(b.cpu_times)) * 1e3, "gpu_ms": float(np.median(b.gpu_times[0])) * 1e3}
    r["ratio"] = r["gbdist"]["gpu_ms"] / r["cusparse"]["gpu_ms"]
    rows.append(r); print(json.dumps(r), flush=True)
    del A; cupy.get_default_memory_pool().free_all_blocks()
json.dump(rows, open(f"{OUT}/spgemm-reads-{sys.argv[2]}.json", "w"), indent=1)
