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

import os
import statistics
import time

import numpy as np

from benchmarks import datasets


def _cluster(cpu: bool, threads: int, workers: int = 1):
    import distributed
    if cpu:
        return distributed.LocalCluster(n_workers=workers, threads_per_worker=threads,
                                        processes=True, dashboard_address=None), \
            f"LocalCluster (CPU), {workers} worker(s)"
    devices = ",".join(str(g) for g in range(workers))
    try:
        from dask_cuda import LocalCUDACluster
        return (LocalCUDACluster(n_workers=workers, CUDA_VISIBLE_DEVICES=devices,
                                 dashboard_address=None),
                f"dask_cuda.LocalCUDACluster, {workers} GPU worker(s)")
    except Exception as e:  # noqa: BLE001 - not installed, or not for this CUDA
        print(f"dask-cuda unavailable ({type(e).__name__}: {e}); one worker process per GPU "
              "pinned by CUDA_VISIBLE_DEVICES", flush=True)
        spec = {g: {"cls": distributed.Nanny,
                    "options": {"nthreads": 1, "env": {"CUDA_VISIBLE_DEVICES": str(g)}}}
                for g in range(workers)}
        return (distributed.SpecCluster(spec, scheduler={
                    "cls": distributed.Scheduler, "options": {"dashboard_address": None}}),
                f"SpecCluster, {workers} worker process(es), one per GPU (no dask-cuda)")


def _memory(client) -> dict:
    """Device bytes each worker's CuPy pool holds (it keeps freed blocks: about the peak
    since the last reset)."""
    def held():
        import cupy
        return int(cupy.get_default_memory_pool().total_bytes())
    return client.run(held)


def _reset_memory(client) -> None:
    def free():
        import cupy
        cupy.get_default_memory_pool().free_all_blocks()
    client.run(free)


def _median_ms(fn, repeats: int, before=None) -> tuple[float, list]:
    """Median wall ms of ``fn()``; ``before()`` runs untimed ahead of each call."""
    times = []
    for _ in range(repeats):
        if before is not None:
            before()
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times), times


def _name(key) -> str:
    """A task's name: its key's prefix (``share_lists-<token>-2`` -> ``share_lists``)."""
    from dask.utils import key_split
    return key_split(key)


def _task_seconds(records) -> dict:
    """Seconds of worker compute per task name (the key's prefix), from a task stream: where
    the time of a partitioned run goes (pair tasks, tree merges, the last merge per block)."""
    out: dict = {}
    for rec in records:
        name = _name(rec["key"])
        for s in rec.get("startstops", ()):
            what = name if s.get("action") == "compute" else f"{s.get('action')} for {name}"
            out[what] = out.get(what, 0.0) + s["stop"] - s["start"]
            if s.get("action") == "compute" and name in ("share_knn", "share_lists"):
                out.setdefault(f"{name} each", []).append(round(s["stop"] - s["start"], 4))
    return dict(sorted(out.items(), key=lambda kv: -(kv[1] if isinstance(kv[1], float) else 0)))


def _timeline(records, t0: float, t1: float) -> dict:
    """Milliseconds from the submit (``t0``, wall clock) to the first task's start, to the
    last share's end, to the last merge's end, and to the answer on the client (``t1``):
    the fixed costs around the shares (one host: the workers' clocks are the client's)."""
    ends: dict = {}
    first = None
    for rec in records:
        name = _name(rec["key"])
        for s in rec.get("startstops", ()):
            if s.get("action") != "compute":
                continue
            first = s["start"] if first is None else min(first, s["start"])
            kind = "shares" if name.startswith("share") else "merges"
            ends[kind] = max(ends.get(kind, s["stop"]), s["stop"])
    if first is None:
        return {}
    out = {"first_task_start": (first - t0) * 1e3}
    out.update({f"last_{k}_end": (v - t0) * 1e3 for k, v in ends.items()})
    out["answer_on_client"] = (t1 - t0) * 1e3
    return {k: round(v, 1) for k, v in out.items()}


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
    ap.add_argument("--shape", default=None,
                    help="paper shapes, comma-separated: " + ", ".join(
                        f"{k} ({v[1]:,} x {v[2]:,}, {v[3]:,} nnz)" for k, v in datasets.PAPER_SHAPES.items())
                    + "; default: --rows/--cols/--nnz (powerlaw 283,228 x 193,886)")
    ap.add_argument("--rows", type=int, default=None, help="powerlaw rows (default 283,228)")
    ap.add_argument("--cols", type=int, default=None, help="powerlaw columns (default 193,886)")
    ap.add_argument("--nnz", type=int, default=None, help="powerlaw nonzeros (default ~27.7M)")
    ap.add_argument("--metrics", default="cosine,manhattan")
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--workers", default="1", help="cluster sizes to try (GPU workers)")
    ap.add_argument("--layouts", default="replicated,partitioned",
                    help="replicated (gbd.replicate: each worker a share of the tiles; the "
                         "lists GPU to GPU by CUDA IPC on one host), replicated-tcp (the same "
                         "with the lists through Dask's transfers) and/or "
                         "partitioned (block-pair tasks over --partitions row blocks)")
    ap.add_argument("--partitions", default="8", help="row partitions of the partitioned layout")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--cpu", action="store_true", help="CPU backend, CPU workers (smoke test)")
    ap.add_argument("--threads", type=int, default=1, help="worker threads with --cpu")
    ap.add_argument("--over-memory", type=float, default=None, metavar="MIB",
                    help="instead: an index over twice MIB on one GPU worker whose CuPy pool "
                         "is limited to MIB (host partitions, each pair task brings its two "
                         "blocks to the GPU); answers checked against the CPU on sampled rows")


def _inputs(args):
    if not args.shape:
        kw = {k: v for k, v in (("n_rows", args.rows), ("n_cols", args.cols),
                                ("nnz", args.nnz)) if v is not None}
        X, meta = datasets.load("powerlaw", **kw)
        yield meta.get("name", "powerlaw"), X
        return
    for name in args.shape.split(","):
        gen, rows, cols, nnz = datasets.PAPER_SHAPES[name]
        if gen == "uniform":
            yield name, datasets.uniform(rows, cols, nnz)
        else:
            yield name, datasets.load("powerlaw", n_rows=rows, n_cols=cols, nnz=nnz)[0]


def _single(X, metrics, args):
    """Single-process gb.knn per metric: (median ms of the faster form, its times, host answer,
    pool bytes, {form: median ms} of gb.knn on X and on gb.prepare(X))."""
    import gbdist as gb
    backend = "cpu" if args.cpu else "cuda"
    if args.cpu:
        Xs, sync, held = X, (lambda: None), (lambda: 0)
    else:
        import cupy
        import cupyx.scipy.sparse as cps
        Xs = cps.csr_matrix(X)
        sync = cupy.cuda.Device().synchronize
        pool = cupy.get_default_memory_pool()
        held = pool.total_bytes
    refs = {}
    # gb.knn on the matrix as given (the accuracy rule's statistics gathered each call) and
    # on gb.prepare(X) (kept with the operand, as a replica keeps its decision): the
    # faster is the one-GPU reference, both are recorded
    forms = {"raw": Xs, "prepared": gb.prepare(Xs)}
    for metric in metrics:
        res, by_form = {}, {}
        for name, Xf in forms.items():
            def single(Xf=Xf):
                res["out"] = gb.knn(Xf, k=args.k, metric=metric, backend=backend)
                sync()

            single()  # warm-up: compilation, caches
            by_form[name] = _median_ms(single, args.repeats)
            d, i = res.pop("out")
            ans = (d.get() if hasattr(d, "get") else d, i.get() if hasattr(i, "get") else i)
            if name == "raw":
                ref = ans
            else:  # the same answer either way, bit for bit
                assert np.array_equal(ans[1], ref[1]) and np.array_equal(ans[0], ref[0],
                                                                          equal_nan=True)
        best = min(by_form, key=lambda f: by_form[f][0])
        ms, times = by_form[best]
        refs[metric] = (ms, times, ref, int(held()), {f: v[0] for f, v in by_form.items()})
        print(f"  single-process {metric}: {ms:.1f} ms ({best}; "
              + ", ".join(f"{f} {v[0]:.1f}" for f, v in by_form.items()) + ")", flush=True)
    del Xs, forms
    if not args.cpu:
        cupy.get_default_memory_pool().free_all_blocks()
    return refs


def _layouts(X, client, args, workers: int):
    """(label, data) per layout to time, each made (and put on the workers) before timing."""
    import distributed
    import gbdist.dask as gbd
    for layout in [x for x in args.layouts.split(",") if x]:
        if layout in ("replicated", "replicated-tcp"):
            parts = gbd.partition(X, client, n_partitions=workers)
            data = gbd.replicate(parts, client, device=not args.cpu)
            distributed.wait(data.futures)
            before = os.environ.get("GBDIST_DASK_IPC")
            if layout == "replicated-tcp":  # the lists through Dask's transfers, not CUDA IPC
                os.environ["GBDIST_DASK_IPC"] = "0"
            try:
                yield layout, workers, data
            finally:
                if before is None:
                    os.environ.pop("GBDIST_DASK_IPC", None)
                else:
                    os.environ["GBDIST_DASK_IPC"] = before
            del data, parts
        else:
            for n in [int(p) for p in args.partitions.split(",") if p]:
                parts = gbd.partition(X, client, n_partitions=n)
                if not args.cpu:
                    parts = gbd.to_device(parts, client)
                distributed.wait(parts.futures)
                yield "partitioned", n, parts
                del parts


def over_memory(args) -> dict:
    """An index larger than the worker's GPU memory (a CuPy pool limit stands for a small
    GPU): partitions stay on the host, every pair task brings its two blocks to the device,
    and no device ever holds the whole index. Checked against gbdist's CPU backend on
    sampled rows (itself tested against SciPy)."""
    import distributed
    import gbdist as gb
    import gbdist.dask as gbd

    limit = int(args.over_memory * 2**20)
    rows = args.rows or 200_000
    cols = args.cols or 50_000
    nnz = args.nnz or int(2.2 * limit / 8)  # float32 values + int32 columns: 8 B an entry
    X = datasets.uniform(rows, cols, nnz, seed=1)
    index_bytes = X.data.nbytes + X.indices.nbytes + X.indptr.nbytes
    assert index_bytes > 2 * limit, (index_bytes, limit)
    n_parts = int(args.partitions.split(",")[0])
    print(f"index {rows:,} x {cols:,}, nnz {X.nnz:,}: {index_bytes / 2**20:.0f} MiB on the host; "
          f"GPU pool limited to {limit / 2**20:.0f} MiB; {n_parts} partitions", flush=True)
    cluster, what = _cluster(False, 1, 1)
    out = {"rows": [], "failed": False}

    def cap():
        import cupy
        cupy.get_default_memory_pool().set_limit(size=limit)
        return cupy.get_default_memory_pool().get_limit()

    with distributed.Client(cluster) as client:
        print(f"worker pool limit: {client.run(cap)}", flush=True)
        parts = gbd.partition(X, client, n_partitions=n_parts)  # host blocks
        rng = np.random.default_rng(0)
        sample = np.sort(rng.choice(rows, size=min(200, rows), replace=False))
        for metric in [m for m in args.metrics.split(",") if m]:
            t0 = time.perf_counter()
            d, i = gbd.knn(parts, k=args.k, metric=metric, client=client, backend="cuda",
                           working_memory=max(1.0, args.over_memory / 4))
            sec = time.perf_counter() - t0
            held = max(_memory(client).values())
            rd, ri = gb.knn(X[sample], X, k=args.k + 1, metric=metric, backend="cpu",
                            exclude_self=False)
            # the sampled rows' own index is dropped by gbdist's rule (by index)
            hit = ri == sample[:, None]
            keep = ~hit
            keep[~hit.any(axis=1), -1] = False
            rd, ri = rd[keep].reshape(len(sample), args.k), ri[keep].reshape(len(sample), args.k)
            same_i = bool(np.array_equal(i[sample], ri))
            close_d = bool(np.allclose(d[sample], rd, rtol=1e-5, atol=1e-6))
            ok = close_d and (same_i or bool(np.allclose(
                np.sort(d[sample], axis=1), np.sort(rd, axis=1), rtol=1e-5, atol=1e-6)))
            out["failed"] |= not ok
            row = {"metric": metric, "rows": rows, "cols": cols, "nnz": int(X.nnz),
                   "index_bytes": int(index_bytes), "pool_limit": limit,
                   "worker_pool_bytes": int(held), "partitions": n_parts, "seconds": sec,
                   "sampled_rows": int(len(sample)), "same_indices": same_i,
                   "distances_close": close_d, "ok": ok}
            out["rows"].append(row)
            print(f"  {metric}: {sec:.1f} s, worker pool {held / 2**20:.0f} MiB "
                  f"(limit {limit / 2**20:.0f}), sampled rows: indices equal {same_i}, "
                  f"distances close {close_d}", flush=True)
    cluster.close()
    return out


def run(args) -> dict:
    """Per shape: single process, then each cluster size and layout; equal answers first."""
    import distributed
    import gbdist.dask as gbd

    if args.over_memory:
        return over_memory(args)
    backend = "cpu" if args.cpu else "cuda"
    rows, failed = [], False
    metrics = [m for m in args.metrics.split(",") if m]
    for name, X in _inputs(args):
        print(f"{name}: {X.shape[0]:,} x {X.shape[1]:,}, nnz {X.nnz:,}; k = {args.k}",
              flush=True)
        refs = _single(X, metrics, args)
        for workers in [int(w) for w in args.workers.split(",") if w]:
            cluster, what = _cluster(args.cpu, args.threads, workers)
            print(f"cluster: {what}", flush=True)
            with distributed.Client(cluster) as client:
                for layout, n_parts, data in _layouts(X, client, args, workers):
                    for metric in metrics:
                        single_ms, single_times, ref, single_bytes, single_forms = refs[metric]

                        def forgotten():  # the last run's keys gone from the scheduler,
                            keys = list(last)  # so no call finds its tasks already done
                            while keys and client.run_on_scheduler(
                                    lambda dask_scheduler, keys=keys: sum(
                                        k in dask_scheduler.tasks for k in keys)):
                                time.sleep(0.002)

                        last: list = []

                        def run():
                            r = gbd.knn_submit(data, k=args.k, metric=metric, client=client,
                                               backend=backend)
                            last[:] = [f.key for f in r.futures.values()]
                            return r.result()

                        client.run(gbd.tasks.warm, metric, {}, backend, X.shape[1])
                        if not args.cpu:
                            _reset_memory(client)
                        cmp = _compare(ref, run())  # checked before any timing
                        if not cmp["equal"]:
                            failed = True
                            print(f"  MISMATCH {metric} {layout}: {cmp}", flush=True)
                        dask_ms, dask_times = _median_ms(run, args.repeats, forgotten)

                        def resident():  # merged on the workers, not yet on the client
                            r = gbd.knn_submit(data, k=args.k, metric=metric, client=client,
                                               backend=backend)
                            last[:] = [f.key for f in r.futures.values()]
                            distributed.wait(list(r.futures.values()))
                            r.futures.clear()

                        resident_ms, resident_times = _median_ms(resident, args.repeats, forgotten)
                        device_ms = device_times = device_timeline = None
                        if not args.cpu:  # the answer on this process's GPU, as gb.knn's is

                            def to_device():
                                import cupy
                                r = gbd.knn_submit(data, k=args.k, metric=metric,
                                                   client=client, backend=backend,
                                                   to_device=True)
                                last[:] = [f.key for f in r.futures.values()]
                                out = r.result()
                                cupy.cuda.runtime.deviceSynchronize()
                                return out

                            got = to_device()
                            dcmp = _compare(ref, (got[0].get(), got[1].get()))
                            if not dcmp["equal"]:
                                failed = True
                                print(f"  MISMATCH (to_device) {metric} {layout}: {dcmp}",
                                      flush=True)
                            del got
                            device_ms, device_times = _median_ms(to_device, args.repeats,
                                                                 forgotten)
                            forgotten()
                            with distributed.get_task_stream(client) as stream:  # profiled
                                w0 = time.time()
                                to_device()
                                w1 = time.time()
                            device_timeline = _timeline(stream.data, w0, w1)
                        forgotten()
                        with distributed.get_task_stream(client) as stream:  # profiled run
                            t0, w0 = time.perf_counter(), time.time()
                            run()
                            profiled_ms = (time.perf_counter() - t0) * 1e3
                            w1 = time.time()
                        by_task = _task_seconds(stream.data)
                        timeline = _timeline(stream.data, w0, w1)
                        mem = {} if args.cpu else _memory(client)
                        row = {"dataset": name, "shape": list(X.shape), "nnz": int(X.nnz),
                               "k": args.k, "metric": metric, "workers": workers,
                               "layout": layout, "partitions": n_parts, "cluster": what,
                               "backend": backend, "single_ms": single_ms,
                               "single_forms_ms": single_forms,
                               "single_times": single_times, "single_device_bytes": single_bytes,
                               "dask_ms": dask_ms, "dask_times": dask_times,
                               "speedup": single_ms / dask_ms, "profiled_ms": profiled_ms,
                               "resident_ms": resident_ms, "resident_times": resident_times,
                               "resident_speedup": single_ms / resident_ms,
                               "device_ms": device_ms, "device_times": device_times,
                               "device_speedup": single_ms / device_ms if device_ms else None,
                               "task_seconds": by_task, "timeline_ms": timeline,
                               "device_timeline_ms": device_timeline,
                               "worker_device_bytes": sorted(mem.values()), **cmp}
                        rows.append(row)
                        gib = max(mem.values(), default=0) / 2**30
                        print(f"  {metric:10s} {workers} worker(s) {layout:11s} ({n_parts}): "
                              f"single {single_ms:8.1f} ms, dask {dask_ms:8.1f} ms, "
                              f"x{row['speedup']:.2f} (answer on the workers {resident_ms:.1f} ms, "
                              f"x{row['resident_speedup']:.2f}; to this GPU "
                              f"{device_ms or float('nan'):.1f} ms), worker pool {gib:.1f} GiB, equal "
                              f"{cmp['equal']}", flush=True)
                        print(f"    timeline (ms from submit): {timeline}", flush=True)
                        if device_timeline:
                            print(f"    to this GPU: {device_timeline}", flush=True)
                        print("    worker time by task: " + ", ".join(
                            f"{k} {sec * 1e3:.0f} ms" if isinstance(sec, float) else f"{k} {sec}"
                            for k, sec in by_task.items()), flush=True)
            cluster.close()
    print("\nshape  metric     workers layout       single ms   dask ms  speed-up"
          "  on workers ms  speed-up  to GPU ms  speed-up  equal")
    for r in rows:
        dev = (f"{r['device_ms']:11.1f} {r['device_speedup']:9.2f}" if r["device_ms"]
               else f"{'—':>11s} {'—':>9s}")
        print(f"{r['dataset']:6s} {r['metric']:10s} {r['workers']:7d} {r['layout']:11s}"
              f"{r['single_ms']:11.1f} {r['dask_ms']:9.1f} {r['speedup']:9.2f}"
              f"{r['resident_ms']:15.1f} {r['resident_speedup']:9.2f} {dev}  {r['equal']}")
    return {"rows": rows, "failed": failed}
