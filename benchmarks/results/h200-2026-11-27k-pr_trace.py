"""Issue 30: PageRank (20 fixed steps) at 10^6 vertices: kernels and their device time
against the call's wall time (torch profiler over CuPy's launches)."""
import time, numpy as np, cupy
import gbdist as gb
from gbdist import algorithms as alg
from benchmarks.graph_gpu import undirected_device
from torch.profiler import profile, ProfilerActivity
S = undirected_device(10**6); G = gb.Matrix(S); G.T
for _ in range(3): alg.pagerank(G, steps=20)
cupy.cuda.Device().synchronize()
t = []
for _ in range(10):
    t0 = time.perf_counter(); alg.pagerank(G, steps=20); cupy.cuda.Device().synchronize(); t.append(time.perf_counter() - t0)
print("wall ms median", 1e3 * float(np.median(t)))
with profile(activities=[ProfilerActivity.CUDA, ProfilerActivity.CPU]) as p:
    for _ in range(3): alg.pagerank(G, steps=20)
    cupy.cuda.Device().synchronize()
print(p.key_averages().table(sort_by="cuda_time_total", row_limit=25))
ev = [e for e in p.events() if e.device_type.name == "CUDA"]
if ev:
    ev.sort(key=lambda e: e.time_range.start)
    busy = sum(e.time_range.elapsed_us() for e in ev)
    span = ev[-1].time_range.end - ev[0].time_range.start
    print(f"device busy {busy/3/1e3:.2f} ms a call of span {span/3/1e3:.2f} ms a call; kernels a call {len(ev)/3:.0f}")
