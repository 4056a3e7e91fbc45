"""The knn section: all-pairs k nearest neighbours (the self-join ``gb.knn(X)``: each row
left out of its own list), k = 10.

    python benchmarks/run.py knn --data-dir .bench_data --json out.json     # GPU
    python benchmarks/run.py knn --powerlaw --repeats 3                     # MovieLens scale
    python benchmarks/run.py knn --device cpu --data-dir .bench_data        # CPU

**GPU** (the default where CuPy finds a GPU). For each data set, cosine, euclidean,
manhattan, chebyshev, canberra, jensenshannon and hellinger (rows normalised to sum 1 for
the last two). Inputs are on the device (CuPy CSR) before timing; CuPy inputs give CuPy
outputs, so the device work is timed (the n x k answer stays on the device). Reported per
(data set, metric):

* ``knn_ms``: gbdist kNN (distance tiles, device top-k, device merge), the
  median of CUDA-event timings after a warm-up on a slice of the rows;
* ``knn_prepared_ms``: the same kNN on ``gb.prepare(X)`` (the operand's statistics kept, as a
  user who searches one index repeatedly holds it), its answer checked identical first
  (``prepared_identical``); ``/ cosine`` in the table divides by cosine's on the same set;
* ``dist_ms``: the same distance tiles without selection (the sum over tiles
  of the distance computation), so ``knn_ms / dist_ms`` is what selection and
  merging add (target <= 1.25);
* ``cusparse_topk_ms`` (cosine, euclidean): cuSPARSE product + norm expansion
  (benchmarks/peers.py) then ``cupy.argpartition`` + sort of each row block,
  timed on the first ``--peer-rows`` queries and scaled to all;
* ``sklearn_ms`` (cosine, euclidean, manhattan): scikit-learn
  ``NearestNeighbors(algorithm='brute', n_jobs=-1)`` on ``--sklearn-rows``
  queries, scaled;
* ``recall``: recall@k of gbdist's answer against an exact float64 reference
  (gbdist's CPU backend) on 64 sampled queries; a returned neighbour whose
  exact distance equals the exact k-th distance counts as right (ties).

``--powerlaw``: the self-join of ``datasets.powerlaw()`` (283,228 x 193,886, ~27.7M
nonzeros), one timed run per metric, with and without symmetry, checked by recall@k.

**CPU** (``--device cpu``): ``gbdist.knn`` on the default CPU backend (compiled tiles,
compiled top-k selection and merging) against ``NearestNeighbors(algorithm="brute",
n_jobs=--n-jobs)``; the neighbour distances are compared before timing (indices may differ
on ties); the two timed alternately, medians; ratio = scikit-learn's time / gbdist's.
"""
from __future__ import annotations

import time
import traceback
from pathlib import Path

import numpy as np
import scipy.sparse as sps

import gbdist as gb
from benchmarks import datasets, peers
from benchmarks.distances import PROBABILITY

KNN_METRICS = ("cosine", "euclidean", "manhattan", "chebyshev", "canberra", "jensenshannon", "hellinger")
KNN_DATASETS = "movielens,tabula_muris,kos,newsgroups,sec_names"
CPU_DATASETS = "kos,movielens,tabula_muris"
CPU_METRICS = ("cosine", "euclidean", "manhattan")
ROOT = Path(__file__).resolve().parents[1]
RECALL_QUERIES = 64


def _normalise_rows(X: sps.csr_matrix) -> sps.csr_matrix:
    s = np.asarray(X.sum(axis=1)).ravel()
    s[s == 0] = 1.0
    return sps.csr_matrix(sps.diags(1.0 / s) @ X, dtype=np.float32)


def recall_at_k(data: sps.csr_matrix, metric: str, got_idx: np.ndarray, k: int,
                seed: int = 0, queries: int = RECALL_QUERIES) -> float:
    """Recall@k of a self-join answer on sampled queries against float64 exact distances.
    A neighbour within the data type's rounding of the k-th distance counts as a tie (16
    units in the last place, relative, for float32 data; exact for float64): a float32
    answer cannot order values closer than that (e.g. Jensen-Shannon between normalised rows
    that share no column: sqrt(ln 2) for every pair, up to the rounding of each row's sum)."""
    m = data.shape[0]
    tol = 16 * float(np.finfo(np.float32).eps) if data.dtype == np.float32 else 0.0
    rng = np.random.default_rng(seed)
    qs = np.sort(rng.choice(m, size=min(queries, m), replace=False))
    D = gb.pairwise_distances(data[qs].astype(np.float64), data.astype(np.float64), metric=metric,
                              backend="cpu")
    D[np.arange(len(qs)), qs] = np.inf  # the query itself is not a neighbour
    kth = np.sort(D, axis=1)[:, k - 1]
    hits = 0
    for j, q in enumerate(qs):
        cand = got_idx[q]
        hits += int(np.sum(D[j, cand] <= kth[j] + tol * abs(kth[j])))
    return hits / (len(qs) * k)


def _device_distance_only(Xg, metric, wm):
    """Every distance tile gbdist's kNN computes, without selection."""
    import cupy
    from gbdist.backends.cuda import CUDABackend
    from gbdist.neighbors.search import Search
    from gbdist.pairwise import metric_program
    plan = metric_program(metric).plan
    last = None
    for r0, r1, c0, c1, D in Search(plan, Xg, Xg, CUDABackend(), wm).tiles():
        last = D
    cupy.cuda.runtime.deviceSynchronize()
    return last


def _cusparse_topk(Xg, metric, k, rows, wm):
    """The peer: cuSPARSE distances of query blocks, then argpartition + sort per row.
    Blocks are sized from the memory budget; where cuSPARSE's SpGEMM runs out of resources
    on a block (dense-ish rows: its workspace grows with the product's entries) the block
    is halved until it runs, as a user of it would."""
    import cupy
    n = Xg.shape[0]
    block = int(max(1, min(rows, wm // (16 * max(n, 1)), _PEER_BLOCK.get(id(Xg), rows))))
    out = []
    r0 = 0
    while r0 < rows:
        r1 = min(rows, r0 + block)
        try:
            D = peers.cusparse(Xg[r0:r1], Xg, metric)
        except Exception as e:  # noqa: BLE001 - CuSparseError / OutOfMemoryError
            if block == 1 or not any(w in str(e) for w in ("INSUFFICIENT_RESOURCES", "memory")):
                raise
            block //= 2
            _PEER_BLOCK[id(Xg)] = block
            cupy.get_default_memory_pool().free_all_blocks()
            continue
        D[cupy.arange(r1 - r0), cupy.arange(r0, r1)] = cupy.inf  # self-exclusion
        part = cupy.argpartition(D, k - 1, axis=1)[:, :k]
        vals = cupy.take_along_axis(D, part, axis=1)
        order = cupy.argsort(vals, axis=1)
        out.append(cupy.take_along_axis(part, order, axis=1))
        del D
        r0 = r1
    return out


_PEER_BLOCK: dict = {}  # the block that ran, per operand, for the timed repeats


def _sklearn_knn(X, metric, k, rows):
    from sklearn.neighbors import NearestNeighbors
    nn = NearestNeighbors(n_neighbors=k + 1, algorithm="brute", metric=metric, n_jobs=-1).fit(X)
    return nn.kneighbors(X[:rows], n_neighbors=k + 1)


def bench_knn_dataset(name, X, args, results):
    import cupy
    import cupyx.scipy.sparse as cps
    from gbdist.backends.cuda import CUDABackend
    from gbdist.runtime import grid_shape
    k = args.k
    m = X.shape[0]
    pairs = float(m) * m
    repeats = args.repeats if pairs < 1e9 else max(1, min(args.repeats, 2))
    print(f"\n## kNN {name}: {X.shape[0]} x {X.shape[1]}, nnz {X.nnz}; k = {k}, all pairs "
          f"({pairs:.2e}), repeats {repeats}", flush=True)
    for metric in args.metrics:
        data = _normalise_rows(X) if metric in PROBABILITY else X
        row = {"dataset": name, "metric": metric, "shape": list(X.shape), "nnz": int(X.nnz), "k": k,
               "pairs": pairs}
        try:
            Xg = cps.csr_matrix(data)
            wm = CUDABackend().default_budget()
            row["working_memory"] = wm
            row["tile"] = list(grid_shape(
                CUDABackend(), __import__("gbdist.pairwise", fromlist=["x"]).metric_program(metric).plan,
                m, m, np.float32, wm))
            t0 = time.perf_counter()
            gb.knn(Xg[: min(m, 256)], Xg, k=k, metric=metric, backend="cuda", working_memory=wm / 2**20)
            cupy.cuda.runtime.deviceSynchronize()
            row["first_call_ms"] = (time.perf_counter() - t0) * 1e3
            res = {}

            def run_knn():
                res["out"] = gb.knn(Xg, k=k, metric=metric, backend="cuda", working_memory=wm / 2**20)

            row["knn_ms"], row["knn_times"] = peers.timeit_cuda(run_knn, repeats, 0, return_times=True)
            out = [cupy.asnumpy(a) for a in res.pop("out")]
            idx = out[1]
            Xp = gb.prepare(Xg)

            def run_prepared():
                res["out"] = gb.knn(Xp, k=k, metric=metric, backend="cuda", working_memory=wm / 2**20)

            run_prepared()
            row["prepared_identical"] = all(
                np.array_equal(a, cupy.asnumpy(b), equal_nan=True) for a, b in zip(out, res.pop("out")))
            row["knn_prepared_ms"], row["knn_prepared_times"] = peers.timeit_cuda(
                run_prepared, repeats, 0, return_times=True)
            res.clear()
            del Xp
            row["dist_ms"], row["dist_times"] = peers.timeit_cuda(
                lambda: _device_distance_only(Xg, metric, wm), repeats, 0, return_times=True)
            row["knn_over_dist"] = row["knn_ms"] / row["dist_ms"]
            cupy.get_default_memory_pool().free_all_blocks()
            if metric in ("cosine", "euclidean"):
                rows = min(m, args.peer_rows)
                try:
                    _cusparse_topk(Xg, metric, k, min(rows, 256), wm)  # warm-up
                    ms = peers.timeit_cuda(lambda: _cusparse_topk(Xg, metric, k, rows, wm),
                                           max(1, min(repeats, 3)), 0)
                    row["cusparse_topk_ms"] = ms * m / rows
                    row["cusparse_topk_rows"] = rows
                except Exception as e:
                    row["cusparse_topk_ms"] = f"error: {type(e).__name__}: {e}"[:160]
                cupy.get_default_memory_pool().free_all_blocks()
            if metric in ("cosine", "euclidean", "manhattan") and args.sklearn_rows > 0:
                rows = min(m, args.sklearn_rows)
                ms = peers.timeit_cpu(lambda: _sklearn_knn(data, metric, k, rows), 1, 0)
                row["sklearn_ms"] = ms * m / rows
                row["sklearn_rows"] = rows
            t0 = time.perf_counter()
            row["recall"] = recall_at_k(data, metric, idx, k)
            row["recall_s"] = time.perf_counter() - t0
        except Exception as e:
            row["error"] = f"{type(e).__name__}: {e}"[:300]
            traceback.print_exc()
        results.append(row)
        _print_knn_row(row)
        cupy.get_default_memory_pool().free_all_blocks()


def _fmt(v, nd=2):
    if v is None:
        return "-"
    if isinstance(v, str):
        return "ERR"
    return f"{v:.{nd}f}"


def _print_knn_row(r):
    print(f"{r['dataset']:<13} {r['metric']:<14} knn {_fmt(r.get('knn_ms')):>10} ms"
          f"  prepared {_fmt(r.get('knn_prepared_ms')):>10} (identical {r.get('prepared_identical')})"
          f"  dist {_fmt(r.get('dist_ms')):>10}  ratio {_fmt(r.get('knn_over_dist')):>5}"
          f"  cusparse+topk {_fmt(r.get('cusparse_topk_ms')):>10}  sklearn {_fmt(r.get('sklearn_ms')):>10}"
          f"  recall {_fmt(r.get('recall'), 4)}  first {_fmt(r.get('first_call_ms')):>8}"
          + (f"  {r['error']}" if r.get("error") else ""), flush=True)


def knn_summary(results) -> list[str]:
    def ratio(a, b):
        return f"{a / b:.3g}x" if isinstance(a, float) and isinstance(b, float) and b > 0 else "-"

    cosine = {r["dataset"]: r.get("knn_prepared_ms") for r in results if r["metric"] == "cosine"}
    lines = ["", "| data set | metric | kNN ms | kNN on gb.prepare(X) ms | / cosine (prepared) "
             "| distances ms | kNN / distances | vs cuSPARSE+top-k | vs sklearn | recall@10 |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in results:
        g = r.get("knn_ms")
        p = r.get("knn_prepared_ms")
        same = "" if r.get("prepared_identical", True) else " (differs!)"
        lines.append(f"| {r['dataset']} | {r['metric']} | {_fmt(g)} | {_fmt(p)}{same} | "
                     f"{ratio(p, cosine.get(r['dataset']))} | {_fmt(r.get('dist_ms'))} | "
                     f"{_fmt(r.get('knn_over_dist'))} | {ratio(g, r.get('cusparse_topk_ms'))} | "
                     f"{ratio(g, r.get('sklearn_ms'))} | {_fmt(r.get('recall'), 4)} |")
    return lines


def add_arguments(p):
    datasets.add_source_arguments(p)
    p.add_argument("--datasets", default=None,
                   help=f"comma-separated (default GPU: {KNN_DATASETS}; CPU: {CPU_DATASETS})")
    p.add_argument("--metrics", default=None,
                   help="comma-separated (default GPU: the six; CPU: cosine,euclidean,manhattan)")
    p.add_argument("--k", type=int, default=10)
    p.add_argument("--repeats", type=int, default=None, help="timings per median (GPU 5, CPU 2)")
    p.add_argument("--peer-rows", type=int, default=8192,
                   help="GPU: queries the cuSPARSE + top-k peer runs on (scaled to all rows)")
    p.add_argument("--sklearn-rows", type=int, default=64,
                   help="GPU: queries scikit-learn runs on (scaled to all rows)")
    p.add_argument("--n-jobs", type=int, default=2, help="CPU: scikit-learn's n_jobs")
    p.add_argument("--powerlaw", action="store_true",
                   help="GPU: the MovieLens-scale all-pairs kNN of datasets.powerlaw() "
                        "(283,228 x 193,886, ~27.7M nonzeros), one run per metric")
    p.add_argument("--time-limit", type=float, default=1e9,
                   help="--powerlaw: seconds for the whole run; a run whose estimate "
                        "(from a slice of the queries) does not fit what is left is skipped")
    p.add_argument("--powerlaw-metrics", default="",
                   help="--powerlaw: comma-separated metrics (default: the six)")


def run(args) -> dict:
    """The section: GPU or CPU, as ``--device`` says."""
    if args.device is None:
        args.device = "cuda" if peers.gpu_present() else "cpu"
    gpu = args.device == "cuda"
    args.metrics = [m for m in (args.metrics or (",".join(KNN_METRICS) if gpu else
                                                 ",".join(CPU_METRICS))).split(",") if m]
    args.datasets = args.datasets or (KNN_DATASETS if gpu else CPU_DATASETS)
    if args.repeats is None:
        args.repeats = 5 if gpu else 2
    return run_knn(args) if gpu else run_cpu(args)


def run_knn(args) -> dict:
    """The GPU runs for ``args``; prints the table last."""
    import cupy
    dev = cupy.cuda.runtime.getDeviceProperties(0)
    print(f"device: {dev['name'].decode()}; CuPy {cupy.__version__}; gbdist {gb.__version__}",
          flush=True)
    if args.powerlaw:
        return run_powerlaw(args, dev["name"].decode())
    results: list = []
    for name in [d for d in args.datasets.split(",") if d]:
        X = datasets.load(name, args.data_dir)[0].astype(np.float32)
        bench_knn_dataset(name, sps.csr_matrix(X), args, results)
    print("\n".join(knn_summary(results)))
    return {"device": dev["name"].decode(), "mode": "knn", "k": args.k, "results": results}


# ---------------------------------------------------------------------------
# CPU: gbdist.knn against scikit-learn's brute force
# ---------------------------------------------------------------------------

def run_cpu(args) -> dict:
    """k nearest neighbours of every row among all rows (self excluded) on the CPU."""
    from sklearn.neighbors import NearestNeighbors

    from benchmarks.distances import interleaved
    k, rows = args.k, []
    print(f"{'data':<13} {'metric':<10} {'gbdist knn':>12} {'scikit-learn':>14} {'ratio':>7}")
    for name in [d for d in args.datasets.split(",") if d]:
        X, _ = datasets.load(name, args.data_dir)
        if X.shape[0] > 20000:
            rows.append(dict(dataset=name, skipped="all pairs too many for this machine"))
            continue
        for metric in args.metrics:
            nn = NearestNeighbors(n_neighbors=k, algorithm="brute", metric=metric,
                                  n_jobs=args.n_jobs)
            ours = gb.knn(X, None, k=k, metric=metric, backend="cpu")
            theirs = nn.fit(X).kneighbors()
            # float32 sets: scikit-learn computes cosine in float32 (gbdist in float64)
            rel = 1e-4 if X.dtype == np.float32 else 1e-6
            ok = bool(np.allclose(ours[0], theirs[0], rtol=rel, atol=rel))
            row = dict(dataset=name, metric=metric, k=k, rows=X.shape[0], checked=ok)
            if not ok:
                print(f"{name:<13} {metric:<10} DISTANCES DIFFER; not timed")
                rows.append(row)
                continue
            ours_s, peer_s = interleaved(
                lambda: gb.knn(X, None, k=k, metric=metric, backend="cpu"),
                lambda: nn.fit(X).kneighbors(), args.repeats)
            row["gbdist_ms"], row["peer_ms"] = ours_s * 1e3, peer_s * 1e3
            row["ratio"] = row["peer_ms"] / row["gbdist_ms"]
            rows.append(row)
            print(f"{name:<13} {metric:<10} {row['gbdist_ms']:9.1f} ms {row['peer_ms']:11.1f} ms "
                  f"{row['ratio']:6.1f}x", flush=True)
    return {"mode": "knn-cpu", "k": k, "n_jobs": args.n_jobs, "knn": rows,
            "failed": any(r.get("checked") is False for r in rows)}


# ---------------------------------------------------------------------------
# --powerlaw: MovieLens-scale all-pairs kNN
# ---------------------------------------------------------------------------

POWERLAW_METRICS = ("cosine", "manhattan", "euclidean", "jensenshannon", "canberra", "chebyshev")
POWERLAW_NONSYM = ("cosine", "manhattan")  # also timed without symmetry, if time allows
POWERLAW_RECALL_QUERIES = 32
ESTIMATE_ROWS = 2048


def _sync():
    import cupy
    cupy.cuda.runtime.deviceSynchronize()


def recall_device(Xg, metric, idx, k, seed=0, queries=POWERLAW_RECALL_QUERIES):
    """Recall@k of a self-join answer (host indices) on sampled queries against exact
    float64 distances computed on the GPU in float64 (ties at the k-th distance count as
    right; the query itself is excluded)."""
    import cupy
    m = Xg.shape[0]
    rng = np.random.default_rng(seed)
    qs = np.sort(rng.choice(m, size=min(queries, m), replace=False))
    X64 = Xg.astype(cupy.float64)
    D = gb.pairwise_distances(X64[cupy.asarray(qs)], X64, metric=metric, backend="cuda")
    D = cupy.asnumpy(D) if isinstance(D, cupy.ndarray) else np.asarray(D)
    D = np.where(np.isnan(D), np.inf, D)
    D[np.arange(len(qs)), qs] = np.inf
    kth = np.sort(D, axis=1)[:, k - 1]
    hits = sum(int(np.sum(D[j, idx[q]] <= kth[j] * (1 + 1e-6) + 1e-9)) for j, q in enumerate(qs))
    return hits / (len(qs) * k), qs


def _timed_knn(Xg, metric, k, symmetric, wm):
    import cupy
    cupy.get_default_memory_pool().free_all_blocks()
    _sync()
    t0 = time.perf_counter()
    d, i = gb.knn(Xg, k=k, metric=metric, backend="cuda", working_memory=wm / 2**20, symmetric=symmetric)
    _sync()
    return time.perf_counter() - t0, d, i


def run_powerlaw(args, device: str) -> dict:
    """All-pairs kNN (k = args.k) of datasets.powerlaw() against itself, one timed run per
    (metric, symmetric), each checked by recall@k on 32 queries against float64."""
    import cupy
    import cupyx.scipy.sparse as cps
    from gbdist import neighbors
    from gbdist.backends.cuda import CUDABackend
    from gbdist.pairwise import metric_program
    from gbdist.runtime import grid_shape, symmetric_side
    start = time.perf_counter()
    deadline = start + args.time_limit
    k = args.k
    t0 = time.perf_counter()
    X, meta = datasets.powerlaw()
    X = sps.csr_matrix(X, dtype=np.float32)
    gen_s = time.perf_counter() - t0
    m = X.shape[0]
    print(f"\n## kNN powerlaw: {X.shape[0]} x {X.shape[1]}, nnz {X.nnz} (generated in "
          f"{gen_s:.1f} s); k = {k}, all pairs ({float(m) * m:.2e})", flush=True)
    out = {"device": device, "mode": "knn-powerlaw", "k": k, "dataset": "powerlaw",
           "shape": list(X.shape), "nnz": int(X.nnz), "generate_s": gen_s, "results": []}
    names = [x for x in (args.powerlaw_metrics or ",".join(POWERLAW_METRICS)).split(",") if x]
    runs = [(mt, True) for mt in names] + [(mt, False) for mt in names if mt in POWERLAW_NONSYM]
    data_cache: dict = {}
    answers: dict = {}

    def save():
        if args.json:
            Path(args.json).write_text(__import__("json").dumps(out, indent=1, default=str))

    for metric, sym in runs:
        row = {"metric": metric, "symmetric": sym, "k": k}
        out["results"].append(row)
        try:
            key = metric == "jensenshannon"
            if key not in data_cache:
                data_cache.clear()
                data_cache[key] = cps.csr_matrix(_normalise_rows(X) if key else X)
            Xg = data_cache[key]
            plan = metric_program(metric).plan
            wm = CUDABackend().default_budget()
            row["working_memory"] = wm
            row["proven_symmetric"] = neighbors.is_symmetric(plan)
            if sym:
                s = symmetric_side(CUDABackend(), plan, m, wm, np.float32)
                row["tile"] = [s, s]
                row["tiles"] = (-(-m // s)) * (-(-m // s) + 1) // 2
            else:
                row["tile"] = list(grid_shape(CUDABackend(), plan, m, m, np.float32, wm))
            # estimate (and warm up: compilation) on a slice of the queries, non-symmetric
            q = min(m, ESTIMATE_ROWS)
            _sync()
            t0 = time.perf_counter()
            gb.knn(Xg[:q], Xg, k=k, metric=metric, backend="cuda", working_memory=wm / 2**20)
            _sync()
            t1 = time.perf_counter()
            gb.knn(Xg[q:2 * q], Xg, k=k, metric=metric, backend="cuda", working_memory=wm / 2**20)
            _sync()
            est = (time.perf_counter() - t1) * m / q * (0.55 if sym else 1.0)
            row["first_slice_s"] = t1 - t0
            row["estimate_s"] = est
            left = deadline - time.perf_counter()
            if est > left - 25:  # the recall check and slack
                row["skipped"] = f"estimated {est:.0f} s, {left:.0f} s left"
                print(f"{metric:<14} sym={sym!s:<5} skipped: {row['skipped']}", flush=True)
                save()
                continue
            secs, d, i = _timed_knn(Xg, metric, k, sym, wm)
            times = [secs]
            for _ in range(max(1, args.repeats) - 1):
                if time.perf_counter() + secs > deadline - 25:
                    break
                del d, i
                t, d, i = _timed_knn(Xg, metric, k, sym, wm)
                times.append(t)
            secs = float(np.median(times))
            row["times"] = times
            row["seconds"] = secs
            row["pairs_per_s"] = float(m) * m / secs
            row["peak_pool_bytes"] = int(cupy.get_default_memory_pool().total_bytes())
            idx = cupy.asnumpy(i)
            del d, i
            t0 = time.perf_counter()
            row["recall"], _ = recall_device(Xg, metric, idx, k)
            row["recall_s"] = time.perf_counter() - t0
            if metric in answers:  # symmetric vs not: the same answer (every index)
                row["index_agreement"] = float(np.mean(answers[metric] == idx))
            answers[metric] = idx
            print(f"{metric:<14} sym={sym!s:<5} {secs:8.2f} s median of {len(times)} "
                  f"({row['pairs_per_s']:.2e} pairs/s) agree {row.get('index_agreement', '-')}"
                  f"  estimate {est:6.1f} s  recall@{k} {row['recall']:.4f}  tile {row['tile']}",
                  flush=True)
        except Exception as e:
            row["error"] = f"{type(e).__name__}: {e}"[:300]
            traceback.print_exc()
        cupy.get_default_memory_pool().free_all_blocks()
        save()
    out["total_s"] = time.perf_counter() - start
    print("\n| metric | symmetric | seconds | pairs/s | recall@10 |\n|---|---|---:|---:|---:|")
    for r in out["results"]:
        print(f"| {r['metric']} | {r['symmetric']} | {_fmt(r.get('seconds'))} | "
              f"{r.get('pairs_per_s', 0):.3g} | {_fmt(r.get('recall'), 4)} |"
              + (f" {r.get('skipped') or r.get('error')}" if r.get('skipped') or r.get('error')
                 else ""))
    return out
