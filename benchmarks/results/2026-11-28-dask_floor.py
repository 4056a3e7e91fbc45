"""Issue 31, the tall shape (663K x 858K, pruned): the floor a Dask search cannot go under.
One GPU: gb.knn on gb.prepare(X) over all queries, and over the first 1/2 and 1/4 of them
against the whole index (a worker's row block: its part of the pruned search); then, on a
LocalCUDACluster of W = 1, 2, 4 GPU workers, the round trip of W no-op tasks (submit, run,
gather) and of W tasks returning a 10 x 11 array. Medians of 9 (CUDA events / wall)."""
import json, os, sys, time


def noop(i):
    return i


def small(i):
    import numpy as np
    return np.zeros((10, 11), dtype=np.int64) + i


if __name__ == "__main__":
    import numpy as np, cupy, cupyx.scipy.sparse as cps
    import gbdist as gb
    from benchmarks import datasets, peers
    OUT = os.environ.get("OUT", "/tmp")
    res = {}
    X = datasets.paper_shape("tall")
    Xg = cps.csr_matrix(X); Xp = gb.prepare(Xg); m = X.shape[0]
    gb.knn(Xp, k=10, metric="cosine", backend="cuda")
    res["whole_ms"] = peers.timeit_cuda(lambda: gb.knn(Xp, k=10, metric="cosine", backend="cuda"), 9, 1)
    for parts in (2, 4):
        Q = gb.prepare(Xg[: -(-m // parts)])
        gb.knn(Q, Xp, k=11, metric="cosine", backend="cuda")
        res[f"rows_1_{parts}_ms"] = peers.timeit_cuda(lambda: gb.knn(Q, Xp, k=11, metric="cosine", backend="cuda"), 9, 1)
    print(json.dumps(res), flush=True)
    del Xp, Xg; cupy.get_default_memory_pool().free_all_blocks()
    import distributed
    from dask_cuda import LocalCUDACluster
    import cupy
    Ws = [w for w in (1, 2, 4) if w <= cupy.cuda.runtime.getDeviceCount()]
    for W in Ws:
        with LocalCUDACluster(n_workers=W, CUDA_VISIBLE_DEVICES=",".join(map(str, range(W))),
                              dashboard_address=None) as cl, distributed.Client(cl) as c:
            for name, fn in (("noop", noop), ("small", small)):
                ts = []
                for rep in range(12):
                    t0 = time.perf_counter()
                    c.gather(c.map(fn, [rep * 100 + i for i in range(W)], pure=False))
                    ts.append((time.perf_counter() - t0) * 1e3)
                res[f"w{W}_{name}_ms"] = float(np.median(ts[3:]))
        print(json.dumps(res), flush=True)
    whole = res["whole_ms"]
    print(f"\ngb.knn whole {whole:.1f} ms; 3.4x needs {whole / 3.4:.1f} ms, 1.8x {whole / 1.8:.1f}, 1.1x {whole * 1.1:.1f}")
    for W, part in ((1, None), (2, "rows_1_2_ms"), (4, "rows_1_4_ms")):
        if W not in Ws:
            continue
        work = whole if part is None else res[part]
        print(f"W={W}: a row block {work:.1f} ms + round trip {res[f'w{W}_small_ms']:.1f} ms = {work + res[f'w{W}_small_ms']:.1f} ms")
    json.dump(res, open(f"{OUT}/dask-floor.json", "w"), indent=1)
