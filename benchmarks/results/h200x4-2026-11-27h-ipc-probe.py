"""Where a merge task's time goes: Lists made on GPU 1 in another process, mapped and copied
on GPU 0 here; each piece timed (fresh buffers each time, as a run makes them)."""
import multiprocessing as mp, os, pickle, time, statistics

def producer(conn, n, need, reps):
    os.environ["CUDA_VISIBLE_DEVICES"] = "1"
    import cupy, numpy as np
    from gbdist.dask.ipc import Lists
    keep = []
    t = []
    for r in range(reps):
        d = cupy.random.random((n, need), dtype=cupy.float32); i = cupy.arange(n * need, dtype=cupy.int32).reshape(n, need)
        cupy.cuda.runtime.deviceSynchronize()
        a = time.perf_counter(); L = Lists(d, i); t.append((time.perf_counter() - a) * 1e3)
        keep.append(L)
        conn.send(pickle.dumps(L))
    conn.send(t)
    conn.recv()

if __name__ == "__main__":
    ctx = mp.get_context("spawn")
    n, need, reps = 283228, 11, 8
    a_, b_ = ctx.Pipe()
    p = ctx.Process(target=producer, args=(b_, n, need, reps)); p.start()
    os.environ["CUDA_VISIBLE_DEVICES"] = "0"
    import cupy
    rt = cupy.cuda.runtime
    opens, copies, closes, whole = [], [], [], []
    for r in range(reps):
        L = pickle.loads(a_.recv())
        t0 = time.perf_counter(); base = rt.ipcOpenMemHandle(L.handle); t1 = time.perf_counter()
        out = cupy.empty((n // 4, need), dtype=cupy.float32)
        rt.memcpy(out.data.ptr, base, out.nbytes, 4); t2 = time.perf_counter()
        rt.ipcCloseMemHandle(base); t3 = time.perf_counter()
        opens.append((t1 - t0) * 1e3); copies.append((t2 - t1) * 1e3); closes.append((t3 - t2) * 1e3)
    make = a_.recv()
    a_.send("done"); p.join()
    med = lambda v: f"median {statistics.median(v):.2f} ms (first {v[0]:.2f}, all {[round(x, 2) for x in v]})"
    print("Lists() on GPU 1 (alloc, copy, sync, handle):", med(make))
    print("ipcOpenMemHandle on GPU 0:", med(opens))
    print("memcpy of a quarter's distances:", med(copies))
    print("ipcCloseMemHandle:", med(closes))
