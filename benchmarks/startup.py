"""Start-up on the CPU: ``import gbdist``, ``gbdist --help`` and the first call of a
built-in metric in a fresh process, stage by stage, with an empty and a warm disk cache.

Every number comes from fresh processes (``python -c ...``); each reports its wall time
and its CPU time (``getrusage``: what a shared, loaded machine distorts least). Medians
of ``--repeat`` processes (the cold run is one process: it fills the cache).

The first metric's first call is split into the stages it passes through, each timed in
turn in the same process (their sum is the first call as a user sees it, from
``import gbdist`` to the result):

* ``import gbdist``: the package (PEP 562: no sympy, scikit-learn, Numba, lark);
* ``modules``: ``gbdist.pairwise`` and what it imports: sympy and the compiler,
  the algebra's built-in ops and semirings (proved at import), the front end, the runtime;
* ``library``: the built-in metric library ``metrics.gbd``: the lark parser (built, or
  loaded from the parser cache) and the parse and check of the library text;
* ``analysis+plan``: the metric's program (the analysis from the on-disk analysis cache
  when warm, sympy when cold) and its plan;
* ``backend``: the compiled CPU backend: ``import numba`` and the module set-up;
* ``kernels+run``: the first ``pairwise_distances``: generated modules written or found,
  Numba's target context set up (once per process) and the kernels compiled (cold) or
  loaded from Numba's cache (warm), then the run;
* ``second call``: the same call again (the steady state).

Two floors measured alongside, with no gbdist code: ``python -c pass`` and ``import numpy,
scipy.sparse``; and Numba's own: ``import numba`` plus the first call of a one-line
``@njit(cache=True)`` function loaded from its cache.

    python benchmarks/startup.py [--repeat 5] [--json startup.json]
    python benchmarks/cpu.py --cpu-only first-call       # the same, in the CPU section
"""
from __future__ import annotations

import argparse
import ast
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HEAVY = ("sympy", "sklearn", "numba", "cupy", "lark", "dask")

_CLOCK = r"""
import time, resource, sys
def _now():
    u = resource.getrusage(resource.RUSAGE_SELF)
    return time.perf_counter(), u.ru_utime + u.ru_stime
_marks = [("start", *_now())]
def mark(name):
    _marks.append((name, *_now()))
def report(**extra):
    stages = {n: (t - t0, c - c0) for (_n, t0, c0), (n, t, c) in zip(_marks, _marks[1:])}
    print("RESULT", repr(dict(stages=stages, **extra)))
"""

STAGES = _CLOCK + r"""
import numpy as np, scipy.sparse as sps
mark("numpy+scipy")
X = sps.random(300, 2000, density=0.01, format="csr", random_state=0, dtype=np.float32)
mark("data")
import gbdist as gb
mark("import gbdist")
heavy = sorted({m.split(".")[0] for m in sys.modules} & __HEAVY__)
import gbdist.pairwise
mark("modules")
from gbdist.front.library import ensure_builtins
ensure_builtins()
mark("library")
gb.pairwise.metric_program(__FIRST__)
mark("analysis+plan")
backend = gb.runtime.get_backend("cpu")
mark("backend")
gb.pairwise_distances(X, X, metric=__FIRST__, backend="cpu")
mark("kernels+run")
gb.pairwise_distances(X, X, metric=__FIRST__, backend="cpu")
mark("second call")
for metric in __OTHERS__:
    gb.pairwise_distances(X, X, metric=metric, backend="cpu")
    mark(metric + " first call")
    gb.pairwise_distances(X, X, metric=metric, backend="cpu")
    mark(metric + " second call")
report(heavy_after_import=heavy, backend=backend.name)
"""

IMPORT = _CLOCK + "import gbdist\nmark('import gbdist')\nreport()"
FLOOR = _CLOCK + "import numpy, scipy.sparse\nmark('numpy+scipy')\nreport()"

NUMBA = _CLOCK + r"""
sys.path.insert(0, __WHERE__)
import numpy
mark("numpy")
import numba
mark("import numba")
import gb_startup_probe
gb_startup_probe.f(1.0)
mark("first cached call")
report()
"""
NUMBA_MODULE = "from numba import njit\n\n\n@njit(cache=True)\ndef f(x):\n    return x + 1.0\n"

# stages of the first call, in order; their sum is the first call from `import gbdist` on
FIRST_CALL = ("import gbdist", "modules", "library", "analysis+plan", "backend", "kernels+run")


def _fill(code: str, **values) -> str:
    for k, v in values.items():
        code = code.replace(k, repr(v))
    return code


def _child(code: str, env: dict) -> dict:
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                       cwd=str(ROOT))
    line = [ln for ln in r.stdout.splitlines() if ln.startswith("RESULT ")]
    if r.returncode or not line:
        raise RuntimeError(r.stderr[-2000:])
    return ast.literal_eval(line[-1][len("RESULT "):])


def _process(argv: list, env: dict) -> tuple:
    """Wall and CPU time of a whole process (interpreter start-up included)."""
    import resource
    import time
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    r = subprocess.run(argv, env=env, capture_output=True, text=True, cwd=str(ROOT))
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if r.returncode:
        raise RuntimeError(r.stderr[-2000:])
    return wall, (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)


def _median_stages(runs: list) -> dict:
    names = list(runs[0]["stages"])
    return {n: tuple(statistics.median(r["stages"][n][i] for r in runs) for i in (0, 1))
            for n in names}


def _total(stages: dict) -> tuple:
    return tuple(sum(stages[n][i] for n in FIRST_CALL) for i in (0, 1))


def measure(metrics=("cosine", "manhattan", "chebyshev"), repeat: int = 5) -> dict:
    """Everything the module docstring lists; returns what the JSON holds."""
    base = dict(os.environ, PYTHONPATH=str(ROOT))
    base.pop("GBDIST_CPU_BACKEND", None)
    code = _fill(STAGES, __HEAVY__=set(HEAVY), __FIRST__=metrics[0], __OTHERS__=tuple(metrics[1:]))
    out: dict = dict(load_average=os.getloadavg() if hasattr(os, "getloadavg") else None,
                     repeat=repeat, metrics=list(metrics))
    with tempfile.TemporaryDirectory() as d:
        env = dict(base, GBDIST_CACHE_DIR=d)
        cold = _child(code, env)
        warm = [_child(code, env) for _ in range(repeat)]
        out["cold"] = cold["stages"]
        out["warm"] = _median_stages(warm)
        out["backend"], out["heavy_after_import"] = cold["backend"], cold["heavy_after_import"]
        out["import_gbdist"] = _median_stages([_child(IMPORT, env) for _ in range(repeat)])[
            "import gbdist"]
        walls, cpus = zip(*(_process([sys.executable, "-m", "gbdist", "--help"], env)
                            for _ in range(repeat)))
        out["gbdist_help_process"] = (statistics.median(walls), statistics.median(cpus))
        walls, cpus = zip(*(_process([sys.executable, "-c", "pass"], env) for _ in range(repeat)))
        out["python_process"] = (statistics.median(walls), statistics.median(cpus))
    out["numpy_scipy"] = _median_stages([_child(FLOOR, base) for _ in range(repeat)])["numpy+scipy"]
    with tempfile.TemporaryDirectory() as d:
        Path(d, "gb_startup_probe.py").write_text(NUMBA_MODULE)
        numba_code = _fill(NUMBA, __WHERE__=d)
        _child(numba_code, base)  # compiles and fills Numba's cache
        out["numba"] = _median_stages([_child(numba_code, base) for _ in range(repeat)])
    out["first_call_cold"], out["first_call_warm"] = _total(out["cold"]), _total(out["warm"])
    out["load_average_after"] = os.getloadavg() if hasattr(os, "getloadavg") else None
    _print(out)
    return out


def _ms(pair) -> str:
    return f"{pair[0] * 1e3:7.0f} ms (CPU {pair[1] * 1e3:5.0f} ms)"


def _print(out: dict) -> None:
    print(f"-- start-up ({out['backend']}), medians of {out['repeat']} fresh processes; "
          f"load average {out['load_average']}")
    print(f"   python -c pass           {_ms(out['python_process'])}")
    print(f"   gbdist --help (process)  {_ms(out['gbdist_help_process'])}")
    print(f"   import numpy, scipy      {_ms(out['numpy_scipy'])}")
    print(f"   import gbdist            {_ms(out['import_gbdist'])}   heavy modules after it: "
          f"{out['heavy_after_import'] or 'none'}")
    print(f"   {'stage':<24} {'empty cache':>27} {'warm cache':>27}")
    for name in out["warm"]:
        if name in ("numpy+scipy", "data"):
            continue
        print(f"   {name:<24} {_ms(out['cold'][name])} {_ms(out['warm'][name])}")
    print(f"   {'first call, from import':<24} {_ms(out['first_call_cold'])} "
          f"{_ms(out['first_call_warm'])}")
    nb = out["numba"]
    print(f"   Numba alone: import numba {_ms(nb['import numba'])}, first call of a cached "
          f"one-line kernel {_ms(nb['first cached call'])}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--metrics", default="cosine,manhattan,chebyshev")
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    out = measure(tuple(m for m in args.metrics.split(",") if m), args.repeat)
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1, default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
