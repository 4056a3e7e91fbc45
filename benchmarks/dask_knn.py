"""gbdist.dask against single-process gbdist: the all-pairs kNN on one GPU (issue 14).

    python benchmarks/run.py dask                      # paper scale: powerlaw 283K x 194K
    python benchmarks/run.py dask --rows 20000 --cols 20000 --nnz 2000000   # a quick look
    python benchmarks/run.py dask --cpu --rows 2000 --cols 500 --nnz 20000  # no GPU: smoke

For each metric: the self-join ``gb.knn(X, k)`` in this process on the GPU (CuPy CSR, the
answer left on the device, then synchronised), then the same search through
``gbdist.dask.knn`` on a cluster of one GPU worker: ``dask_cuda.LocalCUDACluster`` when
dask-cuda is installed, else a ``LocalCluster`` of one worker process pinned to GPU 0
(``CUDA_VISIBLE_DEVICES``). The index partitions are put on the worker's GPU once
(``gbdist.dask.to_device``) and the plan is warmed there before timing, as a fitted index
would be. The two answers are compared bit for bit *before* any timing (distances and
indices; a mismatch is printed with the rows that differ, recorded in the JSON, and makes
the exit status 1). Times are wall-clock medians (the Dask time includes scheduling, the
tree merges and bringing the n x k answer back to the client).

Reported per (metric, partitions): ``single_ms``, ``dask_ms``, ``overhead`` (dask / single
- 1), ``equal``. Results go to ``--json``.
"""
from __future__ import annotations

import statistics
import time

import numpy as np


def _cluster(cpu: bool, threads: int):
    import distributed
    if cpu:
        return distributed.LocalCluster(n_workers=1, threads_per_worker=threads, processes=True,
                                        dashboard_address=None), "LocalCluster (CPU)"
    try:
        from dask_cuda import LocalCUDACluster
        return (LocalCUDACluster(n_workers=1, CUDA_VISIBLE_DEVICES="0", dashboard_address=None),
                "dask_cuda.LocalCUDACluster, 1 GPU worker")
    except ImportError:
        env = {"CUDA_VISIBLE_DEVICES": "0"}
        return (distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True,
                                         dashboard_address=None, env=env),
                "LocalCluster, 1 worker process pinned to GPU 0 (dask-cuda not installed)")


def _median_ms(fn, repeats: int) -> tuple[float, list]:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times), times


def _task_seconds(records) -> dict:
    """Seconds of worker compute per task name (the key's prefix), from a task stream: where
    the time of a partitioned run goes (pair tasks, tree merges, the last merge per block)."""
    out: dict = {}
    for rec in records:
        name = rec["key"][0] if isinstance(rec["key"], tuple) else str(rec["key"])
        name = name.rsplit("-", 1)[0]
        for s in rec.get("startstops", ()):
            if s.get("action") == "compute":
                out[name] = out.get(name, 0.0) + s["stop"] - s["start"]
    return dict(sorted(out.items(), key=lambda kv: -kv[1]))


def _compare(ref, got) -> dict:
    rd, ri = ref
    gd, gi = got
    same_i = ri == gi
    same_d = (rd == gd) | (np.isnan(rd) & np.isnan(gd))
    bad = np.flatnonzero(~(same_i & same_d).all(axis=1))
    out = {"equal": bool(bad.size == 0 and rd.dtype == gd.dtype), "rows_differ": int(bad.size),
           "dtypes": [str(rd.dtype), str(gd.dtype)]}
    if bad.size:
        fin = np.isfinite(rd) & np.isfinite(gd)
        out["max_abs_distance_diff"] = float(np.max(np.abs(rd[fin] - gd[fin]), initial=0.0))
        out["first_rows"] = [int(r) for r in bad[:5]]
        out["example"] = {"row": int(bad[0]), "single": [rd[bad[0]].tolist(), ri[bad[0]].tolist()],
                          "dask": [gd[bad[0]].tolist(), gi[bad[0]].tolist()]}
    return out


def add_arguments(ap) -> None:
    ap.add_argument("--rows", type=int, default=None, help="powerlaw rows (default 283,228)")
    ap.add_argument("--cols", type=int, default=None, help="powerlaw columns (default 193,886)")
    ap.add_argument("--nnz", type=int, default=None, help="powerlaw nonzeros (default ~27.7M)")
    ap.add_argument("--metrics", default="euclidean,cosine,manhattan")
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--partitions", default="1,2,4", help="row partitions to try")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--cpu", action="store_true", help="CPU backend, CPU worker (smoke test)")
    ap.add_argument("--threads", type=int, default=1, help="worker threads with --cpu")


def run(args) -> dict:
    """Single process, then each partitioning through gbdist.dask; equal answers first."""
    import distributed
    import gbdist as gb
    import gbdist.dask as gbd
    from benchmarks import datasets

    kw = {k: v for k, v in (("n_rows", args.rows), ("n_cols", args.cols), ("nnz", args.nnz))
          if v is not None}
    X, meta = datasets.load("powerlaw", **kw)
    print(f"powerlaw {X.shape[0]} x {X.shape[1]}, nnz {X.nnz}; k = {args.k}", flush=True)
    backend = "cpu" if args.cpu else "cuda"
    if args.cpu:
        Xs, sync, free = X, (lambda: None), (lambda: None)
    else:
        import cupy
        import cupyx.scipy.sparse as cps
        Xs = cps.csr_matrix(X)
        sync = cupy.cuda.Device().synchronize

        def free():
            cupy.get_default_memory_pool().free_all_blocks()

    rows, failed = [], False
    metrics = [m for m in args.metrics.split(",") if m]
    refs = {}
    for metric in metrics:  # single process first, alone on the GPU
        res = {}

        def single():
            res["out"] = gb.knn(Xs, k=args.k, metric=metric, backend=backend)
            sync()

        single()  # warm-up: compilation, caches
        ms, times = _median_ms(single, args.repeats)
        d, i = res.pop("out")
        refs[metric] = (ms, times, (d.get() if hasattr(d, "get") else d,
                                    i.get() if hasattr(i, "get") else i))
        print(f"  single-process {metric}: {ms:.1f} ms", flush=True)
        free()

    cluster, what = _cluster(args.cpu, args.threads)
    print(f"cluster: {what}", flush=True)
    with distributed.Client(cluster) as client:
        for n_parts in [int(p) for p in args.partitions.split(",") if p]:
            parts = gbd.partition(X, client, n_partitions=n_parts)
            if not args.cpu:
                parts = gbd.to_device(parts, client)
            distributed.wait(parts.futures)
            for metric in metrics:
                single_ms, single_times, ref = refs[metric]

                def run():
                    return gbd.knn(parts, k=args.k, metric=metric, client=client,
                                   backend=backend)

                client.run(gbd.tasks.warm, metric, {}, backend, X.shape[1])
                cmp = _compare(ref, run())  # checked before any timing
                if not cmp["equal"]:
                    failed = True
                    print(f"  MISMATCH {metric}, {n_parts} partitions: {cmp}", flush=True)
                dask_ms, dask_times = _median_ms(run, args.repeats)
                with distributed.get_task_stream(client) as stream:  # one more run, profiled
                    t0 = time.perf_counter()
                    run()
                    profiled_ms = (time.perf_counter() - t0) * 1e3
                by_task = _task_seconds(stream.data)
                row = {"dataset": meta.get("name", "powerlaw"), "shape": list(X.shape),
                       "nnz": int(X.nnz), "k": args.k, "metric": metric, "partitions": n_parts,
                       "cluster": what, "backend": backend, "single_ms": single_ms,
                       "single_times": single_times, "dask_ms": dask_ms,
                       "dask_times": dask_times, "overhead": dask_ms / single_ms - 1,
                       "profiled_ms": profiled_ms, "task_seconds": by_task, **cmp}
                rows.append(row)
                print(f"  {metric:10s} partitions {n_parts}: single {single_ms:9.1f} ms, dask "
                      f"{dask_ms:9.1f} ms, overhead {100 * row['overhead']:+.1f}%, equal "
                      f"{cmp['equal']}", flush=True)
                print("    worker time by task: " + ", ".join(
                    f"{name} {sec * 1e3:.0f} ms" for name, sec in by_task.items()), flush=True)
            del parts
    cluster.close()
    return {"rows": rows, "failed": failed}
