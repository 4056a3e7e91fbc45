"""Issue 30: where a small SpGEMM's and PageRank's time goes (host vs device), one GPU."""
import cProfile, io, json, os, pstats, sys
import numpy as np, cupy
from cupyx.profiler import benchmark
import gbdist as gb
from gbdist.backends.cuda.graph import CudaGraphKernels
from benchmarks.graph_gpu import powerlaw_device, undirected_device, _same_csr
sr = gb.semirings
OUT = os.environ.get("OUT", "/tmp")
res = {}
K = CudaGraphKernels()
def top(fn, n=25, calls=20):
    pr = cProfile.Profile(); pr.enable()
    for _ in range(calls): fn()
    cupy.cuda.Device().synchronize(); pr.disable()
    s = io.StringIO(); pstats.Stats(pr, stream=s).sort_stats("tottime").print_stats(n); return s.getvalue()
for n in (10**4, 10**5):
    A = powerlaw_device(n)
    C = K.spgemm(A, A, sr.plus_times, out_dtype=np.float64); _same_csr(C, A @ A)
    r = {"nnz": int(A.nnz), "out": int(C.nnz)}
    for name, f in (("gbdist", lambda: K.spgemm(A, A, sr.plus_times, out_dtype=np.float64)), ("cusparse", lambda: A @ A)):
        b = benchmark(f, n_repeat=30, n_warmup=3)
        r[name] = {"cpu_ms": float(np.median(b.cpu_times)) * 1e3, "gpu_ms": float(np.median(b.gpu_times[0])) * 1e3}
    r["profile"] = top(lambda: K.spgemm(A, A, sr.plus_times, out_dtype=np.float64))
    try:
        import torch
        from torch.profiler import profile, ProfilerActivity
        with profile(activities=[ProfilerActivity.CUDA, ProfilerActivity.CPU]) as p:
            for _ in range(5): K.spgemm(A, A, sr.plus_times, out_dtype=np.float64)
            cupy.cuda.Device().synchronize()
        r["kernels"] = p.key_averages().table(sort_by="cuda_time_total", row_limit=30)
        with profile(activities=[ProfilerActivity.CUDA, ProfilerActivity.CPU]) as p:
            for _ in range(5): A @ A
            cupy.cuda.Device().synchronize()
        r["kernels_cusparse"] = p.key_averages().table(sort_by="cuda_time_total", row_limit=20)
    except Exception as e:
        r["kernels"] = repr(e)
    res[f"spgemm_{n}"] = r
    print(n, {k: v for k, v in r.items() if k in ("nnz", "out", "gbdist", "cusparse")}, flush=True)
    print(r["profile"][:3000]); print(str(r.get("kernels"))[:4000], flush=True)
# PageRank 10^6, 20 fixed steps: host vs device
from gbdist import algorithms as alg
S = undirected_device(10**6); G = gb.Matrix(S); G.T
alg.pagerank(G, steps=20)
b = benchmark(lambda: alg.pagerank(G, steps=20), n_repeat=15, n_warmup=2)
res["pagerank_1e6"] = {"cpu_ms": float(np.median(b.cpu_times)) * 1e3, "gpu_ms": float(np.median(b.gpu_times[0])) * 1e3,
                       "profile": top(lambda: alg.pagerank(G, steps=20), 30, 10)}
print("pagerank", res["pagerank_1e6"]["cpu_ms"], res["pagerank_1e6"]["gpu_ms"]); print(res["pagerank_1e6"]["profile"][:4000], flush=True)
json.dump(res, open(f"{OUT}/prof30.json", "w"), indent=1)
