"""The latency section: what a user waits for when the work is small (issue 25).

    python benchmarks/run.py latency [--json out.json]          # every part, CPU (+ GPU if present)
    python benchmarks/run.py latency --only startup --repeat 7  # one part
    python benchmarks/run.py latency --tree /tmp/base           # the same runner, another checkout

Five parts (``--only``), each on the CPU and, when CuPy and a GPU are present, on the GPU
(``--device``):

* ``startup``: fresh processes, with warm on-disk caches (one earlier process filled
  them) and with empty ones (a new ``GBDIST_CACHE_DIR`` and ``NUMBA_CACHE_DIR`` for every
  process). The wall time from the moment the process is spawned to its result:
  ``import gbdist`` and the first named-metric distance (cosine of a 300 × 2,000 CSR);
  the first BFS (``gbdist.algorithms.bfs_levels`` on Zachary's 34-vertex karate club);
  ``gbdist explain manhattan`` and ``gbdist knn`` on a 322 × 23,433 ``.mtx`` file (whole
  processes). The knn process is compared with the same ``gb.knn`` in a warm process
  (the ratio is the target). Floors measured alongside: ``python -c pass``, ``import
  numpy, scipy.sparse``, ``gbdist --help``, and Numba's own first cached call.
* ``stages``: the first call of a metric split into the stages it passes through
  (import, modules, library, analysis and plan, backend, kernels and run), then the first
  call of two more metrics. It reaches into gbdist's internals; when a checkout lacks one
  of them the error is recorded and the other parts go on.
* ``distances``: warm calls of ``gb.pairwise_distances(X, metric=...)`` (cosine,
  euclidean, manhattan) on 16, 128 and 1,024 × 300 random CSR (density 0.05), against
  scikit-learn's ``pairwise_distances`` with ``n_jobs=None`` and ``n_jobs=2`` (the faster
  counts); on the GPU against cuSPARSE SpMM through cupyx (the index's dense transpose
  and norms prepared once, as gbdist prepares its own) and, for manhattan, the naive
  merge kernel.
* ``graph``: ``mxv`` (plus_times) on a 1,000-vertex power-law graph against SciPy's
  ``A @ x`` and python-graphblas's ``A.mxv(x, plus_times)``; BFS levels and PageRank on
  10³ and 10⁴ vertices against the same algorithms written in python-graphblas
  (``benchmarks/graph_peers.py``: a loop of masked ``vxm`` with ``any_pair``, a loop of
  ``mxv``). Every object is built outside the timed loop.
* ``service``: ``gb.NearestNeighbors(n_neighbors=10).fit(index)`` once on a 10,000 ×
  2,000 CSR (density 0.01), then 1,000 single-row ``kneighbors`` queries; the median
  query and the total, against scikit-learn's ``NearestNeighbors(algorithm="brute")``
  the same way (``n_jobs=None`` and ``2``, the faster counts).

Every gbdist result is checked against its peer's (``np.allclose``; BFS levels equal)
before anything is timed. Warm times are medians of per-call ``time.perf_counter``
readings, gbdist and its peers timed in turn (the order alternates from round to round,
so a change in a shared machine's load falls on both); on the GPU the device is
synchronised before each reading. Fresh-process times are medians over ``--repeat``
processes (``--cold-repeat`` for empty caches). The table's ratio is gbdist's time over
the peer's (below 1: gbdist faster), next to the issue's target for the row.

``--profile N`` adds a cProfile of warm 16-row cosine calls (the N functions with the most
cumulative time): where a small call's overhead goes. ``--tree PATH`` (an option of
``run.py``) imports gbdist from another checkout, here and in every fresh process
(``PYTHONPATH``), so before/after tables come from one runner; ``run.py report BEFORE.json
--compare AFTER.json`` puts two runs side by side.
"""
from __future__ import annotations

import ast
import contextlib
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sps

PARTS = ("startup", "stages", "distances", "graph", "service")

# Targets of issue 25: (kind, bound). "ratio": gbdist / peer at most bound; "ms": at most
# bound milliseconds of wall time.
TARGETS = {
    ("distances", "cpu", "cosine", 16): ("ratio", 1.2),
    ("distances", "cpu", "cosine", 128): ("ratio", 1.2),
    ("distances", "cpu", "euclidean", 16): ("ratio", 1.2),
    ("distances", "cpu", "euclidean", 128): ("ratio", 1.2),
    ("distances", "cuda", "cosine", 16): ("ratio", 2.0),
    ("distances", "cuda", "cosine", 128): ("ratio", 2.0),
    ("distances", "cuda", "cosine", 1024): ("ratio", 2.0),
    ("graph", "cpu", "mxv vs SciPy", 1000): ("ratio", 3.0),
    ("graph", "cpu", "bfs_levels", 1000): ("ratio", 1.0),
    ("graph", "cpu", "bfs_levels", 10000): ("ratio", 1.0),
    ("graph", "cpu", "pagerank", 1000): ("ratio", 1.0),
    ("graph", "cpu", "pagerank", 10000): ("ratio", 1.0),
    ("startup", "cpu", "first distance", "warm"): ("ms", 500.0),
    ("startup", "cpu", "first bfs", "warm"): ("ms", 500.0),
    ("startup", "cpu", "explain manhattan", "warm"): ("ms", 1000.0),
    ("startup", "cpu", "knn file", "warm"): ("ratio", 1.5),
}

DIST_ROWS = (16, 128, 1024)
DIST_COLS, DIST_DENSITY = 300, 0.05
DIST_METRICS = ("cosine", "euclidean", "manhattan")
GRAPH_SIZES = (1000, 10000)
SERVICE_SHAPE, SERVICE_DENSITY, SERVICE_QUERIES, SERVICE_K = (10000, 2000), 0.01, 1000, 10
# the `gbdist knn` file: 322 cells x 23,433 genes, as the Tabula Muris channel
# Bladder-10X_P4_3 in ../shared/data (468,681 stored UMI counts); random here, same shape
# and number of stored values, so that it can be made on any machine
KNN_FILE_SHAPE, KNN_FILE_NNZ = (322, 23433), 468681

KARATE = (  # Zachary's karate club (networkx.karate_club_graph), 34 vertices, 78 edges
    (0, 1), (0, 2), (0, 3), (0, 4), (0, 5), (0, 6), (0, 7), (0, 8), (0, 10), (0, 11), (0, 12),
    (0, 13), (0, 17), (0, 19), (0, 21), (0, 31), (1, 2), (1, 3), (1, 7), (1, 13), (1, 17),
    (1, 19), (1, 21), (1, 30), (2, 3), (2, 7), (2, 8), (2, 9), (2, 13), (2, 27), (2, 28),
    (2, 32), (3, 7), (3, 12), (3, 13), (4, 6), (4, 10), (5, 6), (5, 10), (5, 16), (6, 16),
    (8, 30), (8, 32), (8, 33), (9, 33), (13, 33), (14, 32), (14, 33), (15, 32), (15, 33),
    (18, 32), (18, 33), (19, 33), (20, 32), (20, 33), (22, 32), (22, 33), (23, 25), (23, 27),
    (23, 29), (23, 32), (23, 33), (24, 25), (24, 27), (24, 31), (25, 31), (26, 29), (26, 33),
    (27, 33), (28, 31), (28, 33), (29, 32), (29, 33), (30, 32), (30, 33), (31, 32), (31, 33),
    (32, 33))


# ---------------------------------------------------------------------------
# timing and the table
# ---------------------------------------------------------------------------

def interleaved(fns: dict, *, min_rounds: int = 20, min_seconds: float = 1.0,
                max_rounds: int = 5000, sync=None) -> dict:
    """Per-call times (ms) of each function in ``fns``, called in turn round after round
    (the order reversed every other round) until there are ``min_rounds`` rounds and
    ``min_seconds`` have passed (at most ``max_rounds``). ``sync``: called before each
    clock reading (the GPU's synchronize), so a call's device work counts. The functions
    are warm: the caller has run each before (compilation, prepared forms)."""
    names = list(fns)
    times: dict = {n: [] for n in names}
    start = time.perf_counter()
    rounds = 0
    while rounds < max_rounds and (rounds < min_rounds or time.perf_counter() - start < min_seconds):
        for name in (names if rounds % 2 == 0 else names[::-1]):
            if sync:
                sync()
            t0 = time.perf_counter()
            fns[name]()
            if sync:
                sync()
            times[name].append((time.perf_counter() - t0) * 1e3)
        rounds += 1
    return times


def _warm(fns: dict) -> dict:
    """Each function's answer from its second call (the first compiles, loads kernels and
    builds prepared forms)."""
    out = {}
    for name, fn in fns.items():
        fn()
        out[name] = fn()
    return out


def median(xs):
    return statistics.median(xs) if xs else None


def make_row(part: str, case: str, device: str, ms, peer: str = "-", peer_ms=None,
             target_key=None, **extra) -> dict:
    """One line of the table; the target (if the issue sets one for ``target_key``) and
    whether it is met are filled in here."""
    ratio = ms / peer_ms if ms is not None and peer_ms else None
    row = dict(part=part, case=case, device=device, ms=ms, peer=peer, peer_ms=peer_ms,
               ratio=ratio, **extra)
    kind_bound = TARGETS.get(target_key) if target_key else None
    if kind_bound:
        kind, bound = kind_bound
        row["target"] = f"≤ {bound:g}×" if kind == "ratio" else f"≤ {bound / 1e3:g} s"
        value = ratio if kind == "ratio" else ms
        row["met"] = None if value is None else bool(value <= bound)
    return row


def _fmt_ms(v) -> str:
    if v is None:
        return "-"
    return f"{v:,.0f}" if v >= 100 else f"{v:.3g}"


def table(rows: list) -> str:
    """The rows as a Markdown table: ms is gbdist's time (a floor's own, for floors);
    CPU ms, for fresh processes, the process's CPU time up to its result or exit."""
    out = ["| part | case | device | ms | CPU ms | peer | peer ms | ratio | target | met |",
           "| --- | --- | --- | ---: | ---: | --- | ---: | ---: | --- | --- |"]
    for r in rows:
        ratio = "-" if r["ratio"] is None else f"{r['ratio']:.2f}×"
        met = {True: "yes", False: "**no**", None: "-"}[r.get("met")]
        out.append(f"| {r['part']} | {r['case']} | {r['device']} | {_fmt_ms(r['ms'])} | "
                   f"{_fmt_ms(r.get('cpu_ms'))} | {r['peer']} | {_fmt_ms(r['peer_ms'])} | "
                   f"{ratio} | {r.get('target', '-')} | {met if 'target' in r else '-'} |")
    return "\n".join(out)


def _load() -> list:
    return list(os.getloadavg()) if hasattr(os, "getloadavg") else None


def _sync_cuda():
    import cupy
    cupy.cuda.Device().synchronize()


def _host(a) -> np.ndarray:
    """A NumPy copy of a NumPy, CuPy or sparse result."""
    if sps.issparse(a):
        a = a.toarray()
    if hasattr(a, "get"):
        a = a.get()
    return np.asarray(a)


def _close(ours, theirs, what: str, rtol: float = 1e-6) -> None:
    """Results agree (relative to the largest value), or AssertionError naming ``what``."""
    a, b = _host(ours).astype(np.float64), _host(theirs).astype(np.float64)
    scale = max(1.0, float(np.nanmax(np.abs(b)))) if b.size else 1.0
    if a.shape != b.shape or not np.allclose(a, b, rtol=rtol, atol=rtol * scale, equal_nan=True):
        diff = float(np.nanmax(np.abs(a - b))) if a.shape == b.shape else "shape"
        raise AssertionError(f"{what}: gbdist and its peer differ (max |diff| {diff})")


# ---------------------------------------------------------------------------
# startup: fresh processes
# ---------------------------------------------------------------------------

# Prepended to every child script: marks hold (name, wall clock, CPU time of the process)
# so that the parent can take the wall time from the moment it spawned the process.
_CLOCK = r"""
import time as _time, resource as _resource, sys
_marks = []
def mark(name):
    u = _resource.getrusage(_resource.RUSAGE_SELF)
    _marks.append((name, _time.time(), u.ru_utime + u.ru_stime))
def report(**extra):
    print("RESULT", repr(dict(marks=_marks, **extra)), flush=True)
"""

NUMPY_FLOOR = _CLOCK + "import numpy, scipy.sparse\nmark('result')\nreport()\n"

FIRST_DISTANCE = _CLOCK + r"""
import numpy as np, scipy.sparse as sps
mark("import numpy, scipy.sparse")
X = sps.random(300, 2000, density=0.01, format="csr", random_state=0)
import gbdist as gb
mark("import gbdist")
if BACKEND == "cuda":
    import cupyx.scipy.sparse as cps
    X = cps.csr_matrix(X.astype(np.float32))
D = gb.pairwise_distances(X, metric="cosine", backend=BACKEND)
D = D.get() if hasattr(D, "get") else D
mark("result")
np.save(sys.argv[1], D)
report(gbdist=gb.__file__)
"""

FIRST_BFS = _CLOCK + r"""
import numpy as np, scipy.sparse as sps
mark("import numpy, scipy.sparse")
e = np.array(EDGES)
r, c = np.r_[e[:, 0], e[:, 1]], np.r_[e[:, 1], e[:, 0]]
A = sps.csr_matrix((np.ones(r.size), (r, c)), shape=(34, 34))
import gbdist as gb
from gbdist.algorithms import bfs_levels
mark("import gbdist")
if BACKEND == "cuda":
    A = gb.Matrix(A).to_device()
levels = bfs_levels(A, 0, backend=BACKEND)
mark("result")
report(levels=[int(v) for v in (levels.get() if hasattr(levels, "get") else levels)],
       gbdist=gb.__file__)
"""

# The first call stage by stage (benchmarks/startup.py before issue 25): each stage timed
# in turn in one process, then the first and second calls of more metrics.
STAGES = _CLOCK + r"""
import numpy as np, scipy.sparse as sps
mark("numpy+scipy")
X = sps.random(300, 2000, density=0.01, format="csr", random_state=0, dtype=np.float32)
import gbdist as gb
mark("import gbdist")
heavy = sorted({m.split(".")[0] for m in sys.modules} & HEAVY)
import gbdist.pairwise
mark("modules")
from gbdist.front.library import ensure_builtins
ensure_builtins()
mark("library")
gb.pairwise.metric_program(FIRST)
mark("analysis+plan")
backend = gb.runtime.get_backend("cpu")
mark("backend")
gb.pairwise_distances(X, X, metric=FIRST, backend="cpu")
mark("kernels+run")
gb.pairwise_distances(X, X, metric=FIRST, backend="cpu")
mark("second call")
for metric in OTHERS:
    gb.pairwise_distances(X, X, metric=metric, backend="cpu")
    mark(metric + " first call")
    gb.pairwise_distances(X, X, metric=metric, backend="cpu")
    mark(metric + " second call")
report(heavy_after_import=heavy, backend=backend.name)
"""
STAGE_NAMES = ("import gbdist", "modules", "library", "analysis+plan", "backend", "kernels+run")
HEAVY = {"sympy", "sklearn", "numba", "cupy", "lark", "dask"}

NUMBA_FLOOR = _CLOCK + r"""
sys.path.insert(0, WHERE)
import numba
mark("import numba")
import gb_startup_probe
gb_startup_probe.f(1.0)
mark("result")
report()
"""
NUMBA_MODULE = "from numba import njit\n\n\n@njit(cache=True)\ndef f(x):\n    return x + 1.0\n"


def _fill(code: str, **values) -> str:
    for k, v in values.items():
        code = code.replace(k, repr(v))
    return code


class Processes:
    """Fresh Python processes running gbdist from ``tree`` (first on ``PYTHONPATH``), each
    in an empty working directory (so the current directory's packages cannot shadow the
    tree's), with the disk caches of ``cache`` (a directory; None: a new empty one for
    every process)."""

    def __init__(self, tree: Path, scratch: Path):
        self.tree, self.scratch = tree, scratch
        self.cwd = scratch / "cwd"
        self.cwd.mkdir(exist_ok=True)
        self._fresh = 0

    def env(self, cache: Path | None) -> dict:
        if cache is None:  # empty caches: a new folder for this process alone
            self._fresh += 1
            cache = self.scratch / f"empty-{self._fresh}"
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join([str(self.tree)] + (
            [env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
        env["GBDIST_CACHE_DIR"] = str(cache)
        env["NUMBA_CACHE_DIR"] = str(cache / "numba")  # gbdist's static kernels too
        for var in ("CUPY_CACHE_DIR", "GBDIST_CPU_BACKEND"):  # gbdist sets CuPy's itself
            env.pop(var, None)
        return env

    def run(self, argv: list, cache: Path | None) -> dict:
        """One process: the wall time (s) from its spawn to each of its marks and to its
        exit, its CPU time, and what it reported."""
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.time()
        r = subprocess.run(argv, env=self.env(cache), cwd=self.cwd, capture_output=True,
                           text=True)
        exit_s = time.time() - t0
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if r.returncode:
            what = " ".join(map(str, argv[:2] if argv[1] == "-c" else argv[:4]))
            raise RuntimeError(f"{what} ...: exit {r.returncode}\n{r.stderr[-2000:]}")
        out = dict(exit_s=exit_s, stdout=r.stdout,
                   cpu_s=(after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime))
        line = [ln for ln in r.stdout.splitlines() if ln.startswith("RESULT ")]
        if line:
            rep = ast.literal_eval(line[-1][len("RESULT "):])
            out["marks"] = {n: (t - t0, c) for n, t, c in rep.pop("marks")}
            out.update(rep)
            if "gbdist" in rep and Path(rep["gbdist"]).resolve().parents[1] != self.tree:
                raise RuntimeError(f"the process imported gbdist from {rep['gbdist']}, "
                                   f"not from {self.tree}")
        return out

    def code(self, code: str, *args) -> list:
        return [sys.executable, "-c", code, *map(str, args)]


def _summary(runs: list, result_mark: str | None) -> dict:
    """Medians over processes: to the result (the mark, else the exit), to the exit, CPU."""
    to_result = [r["marks"][result_mark][0] if result_mark else r["exit_s"] for r in runs]
    cpu = [r["marks"][result_mark][1] if result_mark else r["cpu_s"] for r in runs]
    return dict(n=len(runs), to_result_ms=median(to_result) * 1e3,
                exit_ms=median([r["exit_s"] for r in runs]) * 1e3,
                cpu_ms=median(cpu) * 1e3,
                all_to_result_ms=[round(t * 1e3, 1) for t in to_result])


def _knn_file(scratch: Path) -> tuple:
    """The 322 x 23,433 matrix (random, KNN_FILE_NNZ stored counts), written as .mtx."""
    import scipy.io
    rng = np.random.default_rng(0)
    m, n = KNN_FILE_SHAPE
    flat = rng.choice(m * n, size=KNN_FILE_NNZ, replace=False)
    counts = rng.geometric(0.5, size=KNN_FILE_NNZ).astype(np.float64)  # 1, 2, 3 ... like UMIs
    X = sps.csr_matrix((counts, (flat // n, flat % n)), shape=(m, n))
    path = scratch / "cells.mtx"
    scipy.io.mmwrite(str(path), X)
    return path, X


def startup(args, devices: list, scratch: Path, tree: Path) -> tuple:
    """The fresh-process rows (and their raw medians for the JSON)."""
    from scipy.sparse import csgraph
    from sklearn.metrics.pairwise import cosine_distances
    from sklearn.neighbors import NearestNeighbors
    P = Processes(tree, scratch)
    warm_cache = scratch / "warm"
    py = sys.executable
    rows, raw = [], {}

    # what every child's answer must be (computed here, by SciPy and scikit-learn)
    X = sps.random(300, 2000, density=0.01, format="csr", random_state=0)
    want_cos = cosine_distances(X)
    e = np.array(KARATE)
    A = sps.csr_matrix((np.ones(2 * len(e)), (np.r_[e[:, 0], e[:, 1]], np.r_[e[:, 1], e[:, 0]])),
                       shape=(34, 34))
    d = csgraph.shortest_path(A, unweighted=True, indices=0)
    want_levels = np.where(np.isinf(d), -1, d).astype(np.int64)
    knn_path, K = _knn_file(scratch)
    want_knn = NearestNeighbors(n_neighbors=SERVICE_K, algorithm="brute").fit(K).kneighbors()[0]

    def check_distance(device, out):
        return lambda run: _close(np.load(out), want_cos, "first cosine distance",
                                  1e-4 if device == "cuda" else 1e-9)

    def check_bfs(run):
        if not np.array_equal(run["levels"], want_levels):
            raise AssertionError("first BFS: levels differ from SciPy's")

    def check_explain(run):
        if "manhattan" not in run["stdout"]:
            raise AssertionError("gbdist explain manhattan printed no plan")

    def check_knn(out):
        return lambda run: _close(np.load(out)["distances"], want_knn, "gbdist knn", 1e-6)

    numba_dir = scratch / "numba-floor"  # Numba's own start-up, no gbdist code
    numba_dir.mkdir()
    (numba_dir / "gb_startup_probe.py").write_text(NUMBA_MODULE)

    # (row label, device, argv, the mark that is the result (None: the exit), check,
    #  also with empty caches?, target name)
    cases = [("floor: python -c pass", "cpu", [py, "-c", "pass"], None, None, False, None),
             ("floor: import numpy, scipy.sparse", "cpu", P.code(NUMPY_FLOOR), "result", None,
              False, None),
             ("floor: import numba + first cached @njit call", "cpu",
              P.code(_fill(NUMBA_FLOOR, WHERE=str(numba_dir))), "result", None, False, None),
             ("gbdist --help (whole process)", "cpu", [py, "-m", "gbdist", "--help"], None, None,
              False, None)]
    for device in devices:
        out = scratch / f"first-{device}.npy"
        knn_out = scratch / f"knn-{device}.npz"
        cases += [
            ("import gbdist + first cosine", device,
             P.code(_fill(FIRST_DISTANCE, BACKEND=device), out), "result",
             check_distance(device, out), True, "first distance"),
            ("first BFS (34 vertices)", device,
             P.code(_fill(FIRST_BFS, BACKEND=device, EDGES=KARATE)), "result", check_bfs, True,
             "first bfs")]
        if device == "cpu":  # explain runs on the host only
            cases.append(("gbdist explain manhattan", device,
                          [py, "-m", "gbdist", "explain", "manhattan"], None, check_explain, True,
                          "explain manhattan"))
        cases.append((f"gbdist knn, {KNN_FILE_SHAPE[0]} × {KNN_FILE_SHAPE[1]:,} file", device,
                      [py, "-m", "gbdist", "knn", str(knn_path), "-o", str(knn_out), "--metric",
                       "euclidean", "-k", str(SERVICE_K), "--backend", device, "--quiet"],
                      None, check_knn(knn_out), True, "knn file"))

    print("startup: fresh processes (wall from spawn to result; medians)", flush=True)
    for label, device, argv, mark, check, cold, target in cases:
        key = f"{label} [{device}]"
        try:
            got = {}
            first = P.run(argv, warm_cache)  # fills the warm caches
            if check:
                check(first)
            got["warm"] = _summary([P.run(argv, warm_cache) for _ in range(args.repeat)], mark)
            if cold:
                cold_runs = [P.run(argv, None) for _ in range(args.cold_repeat)]
                if check:
                    check(cold_runs[0])
                got["cold"] = _summary(cold_runs, mark)
        except (RuntimeError, AssertionError) as e:  # report it, go on with the next case
            print(f"  {key}: FAILED: {e}", flush=True)
            raw[key] = dict(error=str(e)[-1000:])
            rows.append(make_row("startup", label, device, None, error=str(e)[-300:]))
            continue
        raw[key] = got
        print(f"  {label:<48} [{device}] warm {got['warm']['to_result_ms']:8.0f} ms"
              + (f"   empty caches {got['cold']['to_result_ms']:8.0f} ms" if cold else ""),
              flush=True)
        peer, peer_ms = "-", None
        if target == "knn file":  # against the same search in a warm process
            compute = _knn_in_process(knn_path, device, args, want_knn)
            raw[f"gb.knn in a warm process [{device}]"] = compute
            peer, peer_ms = "gb.knn, warm process", compute["knn_ms"]
        for state in got:
            name = label if not cold else f"{label}, {_state(state)}"
            rows.append(make_row("startup", name, device, got[state]["to_result_ms"], peer,
                                 peer_ms, target_key=("startup", device, target, state),
                                 cpu_ms=got[state]["cpu_ms"], processes=got[state]["n"]))
    return rows, raw


def _state(state: str) -> str:
    return "warm caches" if state == "warm" else "empty caches"


def _knn_in_process(path: Path, backend: str, args, want) -> dict:
    """The computing time of the file's knn in this (warm) process: ``gb.knn`` on the
    matrix already read, median of several calls after one that compiles or loads."""
    import scipy.io

    import gbdist as gb
    t0 = time.perf_counter()
    X = sps.csr_matrix(scipy.io.mmread(str(path)))
    read_ms = (time.perf_counter() - t0) * 1e3
    if backend == "cuda":
        import cupyx.scipy.sparse as cps
        X = cps.csr_matrix(X.astype(np.float32))
    run = lambda: gb.knn(X, k=SERVICE_K, metric="euclidean", backend=backend)  # noqa: E731
    _close(run()[0], want, "gb.knn in process", 1e-4 if backend == "cuda" else 1e-6)
    t = interleaved({"knn": run}, min_rounds=7, min_seconds=args.min_seconds,
                    sync=_sync_cuda if backend == "cuda" else None)["knn"]
    return dict(knn_ms=median(t), n=len(t), mmread_ms=read_ms)


def stages(args, scratch: Path, tree: Path) -> dict:
    """The first call stage by stage, warm (median of --repeat) and with empty caches."""
    P = Processes(tree, scratch)
    code = _fill(STAGES, HEAVY=HEAVY, FIRST="cosine", OTHERS=("manhattan", "chebyshev"))
    warm = scratch / "warm-stages"
    out: dict = {}
    try:
        cold = P.run(P.code(code), None)
        P.run(P.code(code), warm)
        runs = [P.run(P.code(code), warm) for _ in range(args.repeat)]
    except RuntimeError as e:  # a checkout without one of the internals named here
        print(f"stages: not measured: {str(e).splitlines()[-1]}", flush=True)
        return dict(error=str(e)[-500:])

    def steps(run):  # each mark's own share: the difference from the mark before
        names = list(run["marks"])
        prev = (0.0, 0.0)
        d = {}
        for n in names:
            t, c = run["marks"][n]
            d[n] = (t - prev[0], c - prev[1]) if n != names[0] else (t, c)
            prev = (t, c)
        return d

    w = [steps(r) for r in runs]
    out["warm"] = {n: [median([s[n][i] * 1e3 for s in w]) for i in (0, 1)] for n in w[0]}
    out["cold"] = {n: [v * 1e3 for v in s] for n, s in steps(cold).items()}
    out["heavy_after_import"] = cold.get("heavy_after_import")
    out["backend"] = cold.get("backend")
    print("stages of the first call (ms, wall / process CPU; the first row counts from spawn)")
    print(f"  {'stage':<26} {'warm caches':>18} {'empty caches':>18}")
    for n in out["warm"]:
        ww, cc = out["warm"][n], out["cold"].get(n, [float('nan')] * 2)
        print(f"  {n:<26} {ww[0]:8.0f} / {ww[1]:6.0f}  {cc[0]:8.0f} / {cc[1]:6.0f}")
    first = [n for n in STAGE_NAMES if n in out["warm"]]
    out["first_call_warm_ms"] = sum(out["warm"][n][0] for n in first)
    out["first_call_cold_ms"] = sum(out["cold"][n][0] for n in first)
    print(f"  first call from `import gbdist` on: warm {out['first_call_warm_ms']:.0f} ms, "
          f"empty caches {out['first_call_cold_ms']:.0f} ms; heavy modules after import: "
          f"{out['heavy_after_import'] or 'none'}", flush=True)
    return out


# ---------------------------------------------------------------------------
# distances: tiny and small calls in a warm process
# ---------------------------------------------------------------------------

def cusparse_prepared(X, metric: str):
    """cuSPARSE SpMM through cupyx with the index ``X`` prepared once (its dense transpose
    on the device and its squared row norms), as gbdist keeps its own prepared forms: the
    returned function of the queries ``Q`` pays for ``Q @ Xᵀ``, ``Q``'s norms and the
    expansion."""
    import cupy as cp

    from benchmarks import peers
    x = peers.to_gpu_csr(X)
    xt = cp.ascontiguousarray(x.T.toarray())
    xn = peers._row_sq_norms(x)
    expand = peers._expand_kernel(metric)

    def run(Q):
        dot = Q @ xt
        return expand(dot, peers._row_sq_norms(Q)[:, None], xn[None, :], dot)
    return run


def distances(args, device: str) -> list:
    """gbdist's warm pairwise_distances(X) against its peers, 16 to 1,024 rows."""
    import gbdist as gb
    rows = []
    for n in DIST_ROWS:
        X = sps.random(n, DIST_COLS, density=DIST_DENSITY, format="csr", random_state=n)
        for metric in DIST_METRICS:
            if device == "cpu":
                from sklearn.metrics import pairwise_distances as sk
                fns = {"gbdist": lambda: gb.pairwise_distances(X, metric=metric, backend="cpu"),
                       "n_jobs=None": lambda: sk(X, metric=metric),
                       "n_jobs=2": lambda: sk(X, metric=metric, n_jobs=2)}
                peer_name, sync = "scikit-learn", None
            else:
                import cupyx.scipy.sparse as cps

                from benchmarks import peers
                Xd = cps.csr_matrix(X.astype(np.float32))
                if metric == "manhattan":
                    fns = {"naive merge": lambda: peers.naive_merge(Xd, Xd, "manhattan")}
                    peer_name = "naive merge kernel"
                else:
                    spmm = cusparse_prepared(Xd, metric)
                    fns = {"cuSPARSE SpMM": lambda: spmm(Xd)}
                    peer_name = "cuSPARSE SpMM"
                fns = {"gbdist": lambda: gb.pairwise_distances(Xd, metric=metric,
                                                               backend="cuda"), **fns}
                if hasattr(gb, "prepare"):  # X prepared once, as the peer's forms are
                    P = gb.prepare(Xd)
                    fns["gbdist"] = lambda: gb.pairwise_distances(P, metric=metric,
                                                                  backend="cuda")
                    fns["gbdist, raw CuPy input"] = lambda: gb.pairwise_distances(
                        Xd, metric=metric, backend="cuda")
                sync = _sync_cuda
            results = _warm(fns)
            for k in fns:
                if k.startswith("gbdist"):
                    continue
                ours, theirs = results["gbdist"], results[k]
                if device == "cuda" and metric == "euclidean":
                    # the float32 expansion q + x - 2<q, x> is accurate to ~1e-7 of the
                    # squared norms, so its square root is not near 0: compare squares
                    ours, theirs = _host(ours) ** 2, _host(theirs) ** 2
                _close(ours, theirs, f"{metric} {n} rows vs {k}",
                       1e-6 if device == "cpu" else 1e-4)
            t = interleaved(fns, min_rounds=args.min_rounds, min_seconds=args.min_seconds,
                            sync=sync)
            peers_ms = {k: median(v) for k, v in t.items() if not k.startswith("gbdist")}
            best = min(peers_ms, key=peers_ms.get)
            label = f"{peer_name} ({best})" if device == "cpu" else peer_name
            rows.append(make_row("distances", f"{metric}, {n} × {DIST_COLS}", device,
                                 median(t["gbdist"]), label, peers_ms[best],
                                 target_key=("distances", device, metric, n),
                                 peers_ms=peers_ms, samples=len(t["gbdist"]),
                                 **({"raw_input_ms": median(t["gbdist, raw CuPy input"])}
                                    if "gbdist, raw CuPy input" in t else {})))
            _print_row(rows[-1])
    return rows


def _print_row(r: dict) -> None:
    ratio = "-" if r["ratio"] is None else f"{r['ratio']:.2f}x"
    print(f"  {r['case']:<34} [{r['device']}] gbdist {_fmt_ms(r['ms']):>8} ms   "
          f"{r['peer']} {_fmt_ms(r['peer_ms'])} ms   ratio {ratio}"
          + (f"   target {r['target']}: {'met' if r['met'] else 'MISSED'}" if 'target' in r
             else "")
          + (f"   (raw CuPy input {_fmt_ms(r['raw_input_ms'])} ms)" if "raw_input_ms" in r
             else ""), flush=True)


# ---------------------------------------------------------------------------
# graph: small graphs in a warm process
# ---------------------------------------------------------------------------

def graph(args, device: str) -> list:
    """mxv at 1,000 vertices; BFS levels and PageRank at 10³ and 10⁴ vertices."""
    import gbdist as gb
    from gbdist import algorithms as alg
    from gbdist import graph as gr

    from benchmarks.graphs import power_law_graph
    try:
        from benchmarks import graph_peers as gp
    except ImportError as e:  # python-graphblas is an optional install
        gp = None
        print(f"graph: python-graphblas rows skipped ({e})", flush=True)
    rows = []
    sync = _sync_cuda if device == "cuda" else None
    backend = "cuda" if device == "cuda" else "cpu"

    def timed(fns: dict, check) -> dict:
        """Median ms of each (and "samples": calls of each), after a checked warm-up."""
        check(_warm(fns))
        t = interleaved(fns, min_rounds=args.min_rounds, min_seconds=args.min_seconds,
                        sync=sync)
        return {"samples": len(t["gbdist"]), **{k: median(v) for k, v in t.items()}}

    for n in GRAPH_SIZES:
        A = power_law_graph(n, avg_degree=17, seed=0)
        G = gb.Matrix(A)
        x = np.random.default_rng(0).random(n)
        xv = gb.Vector(x)
        P = gp.to_grb(A) if gp else None
        if device == "cuda":
            import cupy as cp
            import cupyx.scipy.sparse as cps
            G, xv = G.to_device(), gb.Vector(cp.asarray(x))
            Ad, xd = cps.csr_matrix(A), cp.asarray(x)
        if n == 1000:  # mxv: against SciPy (or cuSPARSE) and python-graphblas
            fns = {"gbdist": lambda: gr.mxv(G, xv, gb.semirings.plus_times, backend=backend)}
            if device == "cuda":
                fns["cuSPARSE"] = lambda: Ad @ xd
            else:
                fns["SciPy"] = lambda: A @ x
            if gp and device == "cpu":
                xg = gp.grb.Vector.from_dense(x)
                fns["python-graphblas"] = lambda: P.mxv(xg, gp.semiring.plus_times).new()

            def check(res):
                want = A @ x
                _close(res["gbdist"].to_dense(), want, "mxv")
                for k, v in res.items():
                    if k != "gbdist":
                        _close(v.to_dense(fill_value=0.0) if hasattr(v, "to_dense") else v,
                               want, f"mxv {k}")
            ms = timed(fns, check)
            for k in ms:
                if k in ("gbdist", "samples"):
                    continue
                case = "mxv vs SciPy" if k == "SciPy" else f"mxv vs {k}"
                rows.append(make_row("graph", f"mxv plus_times, {n:,} vertices", device,
                                     ms["gbdist"], k, ms[k],
                                     target_key=("graph", device, case, n),
                                     samples=ms["samples"]))
                _print_row(rows[-1])
        if gp is None:
            continue
        src = int(np.argmax(np.diff(A.indptr)))  # the biggest hub: BFS reaches the giant part
        peer = "python-graphblas" + (" (host)" if device == "cuda" else "")
        for name, ours, theirs, check in (
                ("bfs_levels", lambda: alg.bfs_levels(G, src, backend=backend),
                 lambda: gp.bfs_levels(P, src),
                 lambda r: np.testing.assert_array_equal(_host(r["gbdist"]), r["peer"])),
                ("pagerank", lambda: alg.pagerank(G, backend=backend), lambda: gp.pagerank(P),
                 lambda r: _close(r["gbdist"], r["peer"], "pagerank", 1e-6))):
            ms = timed({"gbdist": ours, "peer": theirs}, check)
            rows.append(make_row("graph", f"{name}, {n:,} vertices", device, ms["gbdist"],
                                 peer, ms["peer"], target_key=("graph", device, name, n),
                                 samples=ms["samples"]))
            _print_row(rows[-1])
    return rows


# ---------------------------------------------------------------------------
# service: a fitted index answering single-row queries
# ---------------------------------------------------------------------------

def service(args, device: str) -> list:
    """NearestNeighbors fitted once, then one query row at a time."""
    import gbdist as gb
    from sklearn.neighbors import NearestNeighbors as SkNN
    index = sps.random(*SERVICE_SHAPE, density=SERVICE_DENSITY, format="csr", random_state=1)
    queries = sps.random(args.service_queries, SERVICE_SHAPE[1], density=SERVICE_DENSITY,
                         format="csr", random_state=2)
    sk_rows = [queries[i] for i in range(queries.shape[0])]  # each query as it would arrive
    backend, sync = "cpu", None
    fit_on, our_rows = index, sk_rows
    if device == "cuda":
        import cupyx.scipy.sparse as cps
        backend, sync = "cuda", _sync_cuda
        fit_on = cps.csr_matrix(index.astype(np.float32))
        our_rows = [cps.csr_matrix(q.astype(np.float32)) for q in sk_rows]
    ours = gb.NearestNeighbors(n_neighbors=SERVICE_K, metric="euclidean",
                               backend=backend).fit(fit_on)
    theirs = {j: SkNN(n_neighbors=SERVICE_K, algorithm="brute", metric="euclidean",
                      n_jobs=j).fit(index) for j in (None, 2)}
    # one untimed pass of each: compiles, prepares, and checks every answer
    for q_ours, q_sk in zip(our_rows, sk_rows):
        want = theirs[None].kneighbors(q_sk)[0]
        _close(ours.kneighbors(q_ours)[0], want, "kneighbors", 1e-4 if device == "cuda" else 1e-6)
    theirs[2].kneighbors(sk_rows[0])  # its thread pool started

    def loop(nn, qs):
        t = []
        for q in qs:
            if sync:
                sync()
            t0 = time.perf_counter()
            nn.kneighbors(q)
            if sync:
                sync()
            t.append((time.perf_counter() - t0) * 1e3)
        return t

    passes = {"gbdist": [], "n_jobs=None": [], "n_jobs=2": []}
    runs = {"gbdist": lambda: loop(ours, our_rows), "n_jobs=None": lambda: loop(theirs[None], sk_rows),
            "n_jobs=2": lambda: loop(theirs[2], sk_rows)}
    for r in range(args.service_repeat):  # whole passes in turn, the order alternating
        for name in (list(runs) if r % 2 == 0 else list(runs)[::-1]):
            passes[name].append(runs[name]())
    per_query = {k: median([t for p in v for t in p]) for k, v in passes.items()}
    total = {k: median([sum(p) for p in v]) for k, v in passes.items()}
    best = min(("n_jobs=None", "n_jobs=2"), key=total.get)
    peer = f"scikit-learn brute ({best})" + (" (host)" if device == "cuda" else "")
    nq = len(sk_rows)
    rows = [make_row("service", f"kneighbors, 1 row, index {SERVICE_SHAPE[0]:,} × "
                     f"{SERVICE_SHAPE[1]:,} (median query)", device, per_query["gbdist"],
                     peer, per_query[best], per_query_ms=per_query),
            make_row("service", f"{nq:,} single-row queries (total)", device, total["gbdist"],
                     peer, total[best], total_ms=total)]
    for r in rows:
        _print_row(r)
    return rows


# ---------------------------------------------------------------------------
# profile: where a warm tiny call's time goes
# ---------------------------------------------------------------------------

def profile(args, device: str) -> str:
    """cProfile of ``--profile-calls`` warm 16 × 300 cosine calls: the functions with the
    most cumulative time (the per-call overhead, phase by phase)."""
    import cProfile
    import io
    import pstats

    import gbdist as gb
    X = sps.random(16, DIST_COLS, density=DIST_DENSITY, format="csr", random_state=16)
    if device == "cuda":
        import cupyx.scipy.sparse as cps
        X = cps.csr_matrix(X.astype(np.float32))
    for _ in range(3):
        gb.pairwise_distances(X, metric="cosine", backend=device)
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(args.profile_calls):
        gb.pairwise_distances(X, metric="cosine", backend=device)
        if device == "cuda":
            _sync_cuda()
    prof.disable()
    s = io.StringIO()
    pstats.Stats(prof, stream=s).sort_stats("cumulative").print_stats(args.profile)
    text = s.getvalue()
    print(f"profile [{device}]: {args.profile_calls} warm calls of cosine, 16 × {DIST_COLS}\n"
          + text, flush=True)
    return text


# ---------------------------------------------------------------------------
# the section
# ---------------------------------------------------------------------------

def add_arguments(p) -> None:
    p.add_argument("--only", default=",".join(PARTS),
                   help="comma-separated parts: " + ", ".join(PARTS))
    p.add_argument("--device", default="",
                   help="comma-separated: cpu, cuda (default: cpu, and cuda when CuPy and a "
                        "GPU are present)")
    p.add_argument("--repeat", type=int, default=5,
                   help="fresh processes per warm-cache case (medians)")
    p.add_argument("--cold-repeat", type=int, default=1,
                   help="fresh processes per empty-cache case (each a new cache folder)")
    p.add_argument("--min-seconds", type=float, default=1.0,
                   help="warm rows: time each row's calls for at least this long")
    p.add_argument("--min-rounds", type=int, default=20,
                   help="warm rows: at least this many calls of each")
    p.add_argument("--service-queries", type=int, default=SERVICE_QUERIES)
    p.add_argument("--service-repeat", type=int, default=2,
                   help="passes over the queries, each library in turn")
    p.add_argument("--profile", type=int, default=0, metavar="N",
                   help="also print the N functions with the most cumulative time in warm "
                        "16-row cosine calls (cProfile)")
    p.add_argument("--profile-calls", type=int, default=200)


def _versions() -> dict:
    import importlib.metadata as md
    out = {}
    for dist in ("numpy", "scipy", "scikit-learn", "numba", "python-graphblas", "cupy"):
        with contextlib.suppress(md.PackageNotFoundError):
            out[dist] = md.version(dist)
    return out


def tree_info(tree: Path) -> dict:
    """Which checkout gbdist came from: its path, commit and whether gbdist/ is modified."""
    def git(*a):
        r = subprocess.run(["git", "-C", str(tree), *a], capture_output=True, text=True)
        return r.stdout.strip() if r.returncode == 0 else None
    status = git("status", "--porcelain", "--", "gbdist")
    return dict(path=str(tree), commit=git("rev-parse", "--short", "HEAD"),
                gbdist_modified=None if status is None else bool(status))


def run(args) -> dict:
    """Every part named in ``--only`` on every device; prints the table last."""
    import gbdist as gb
    parts = [p for p in args.only.split(",") if p]
    unknown = set(parts) - set(PARTS)
    if unknown:
        raise SystemExit(f"latency: unknown parts {sorted(unknown)}; choose from {', '.join(PARTS)}")
    from benchmarks import peers
    devices = [d for d in args.device.split(",") if d] or (
        ["cpu", "cuda"] if peers.gpu_present() else ["cpu"])
    tree = Path(gb.__file__).resolve().parents[1]
    out = dict(section="latency", tree=tree_info(tree), devices=devices,
               machine=dict(cpus=os.cpu_count(), python=platform.python_version(),
                            load_average_before=_load(), versions=_versions()),
               options={k: v for k, v in vars(args).items() if not callable(v)})
    print(f"latency: gbdist from {tree} (commit {out['tree']['commit']}, gbdist/ modified: "
          f"{out['tree']['gbdist_modified']}); devices {devices}; {os.cpu_count()} CPUs; "
          f"load average {_load()}", flush=True)
    rows: list = []
    with tempfile.TemporaryDirectory(prefix="gbdist-latency-") as d:
        scratch = Path(d)
        if "startup" in parts:
            r, out["startup"] = startup(args, devices, scratch, tree)
            rows += r
        if "stages" in parts:
            out["stages"] = stages(args, scratch, tree)
    for device in devices:
        for part, fn in (("distances", distances), ("graph", graph), ("service", service)):
            if part in parts:
                print(f"{part} [{device}] (load average {_load()})", flush=True)
                with _reported(out, f"{part}_{device}_error"):
                    rows += fn(args, device)
        if args.profile:
            out[f"profile_{device}"] = profile(args, device)
    out["rows"] = rows
    out["machine"]["load_average_after"] = _load()
    out["failed"] = any("error" in r for r in rows) or any(k.endswith("_error") for k in out)
    print(f"\nload average before {out['machine']['load_average_before']}, after "
          f"{out['machine']['load_average_after']}; ratio = gbdist / peer\n")
    print(table(rows))
    return out


@contextlib.contextmanager
def _reported(out: dict, key: str):
    """Run a part; an exception is printed and recorded under ``key``, and the next part runs
    (one broken part of a checkout should not hide the others)."""
    try:
        yield
    except Exception as e:  # noqa: BLE001 - report, never hide
        import traceback
        traceback.print_exc()
        out[key] = f"{type(e).__name__}: {e}"[:500]
