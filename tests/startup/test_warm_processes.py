"""Fresh processes over one on-disk cache (issue 25): the first process analyses, compiles
and stores; a second one answers a named metric, its explanation and a BFS from the stored
records, without importing sympy or lark, and with the first one's answers. Timing is not
asserted here (benchmarks/latency.py measures it); which modules a process loaded is.

The processes run the NumPy CPU backend (``GBDIST_CPU_BACKEND=numpy``): the compiled
backend prints its kernels from sympy formulas when it generates them, which is its own
start-up (docs/cpu.md)."""
from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
HEAVY = ("sympy", "lark", "numba", "sklearn")

_PRELUDE = """
import sys, json, logging
logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
def loaded():
    return sorted({m.split('.')[0] for m in sys.modules} & set(%r))
""" % (HEAVY,)


def _run(code: str, cache: Path, **env) -> tuple[dict, str]:
    """(what the process printed as its last line, a dict; its stderr)."""
    r = subprocess.run([sys.executable, "-c", _PRELUDE + code], capture_output=True, text=True,
                       cwd=str(ROOT), timeout=600,
                       env={**os.environ, "PYTHONPATH": str(ROOT), "GBDIST_CACHE_DIR": str(cache),
                            "GBDIST_CPU_BACKEND": "numpy", **env})
    assert r.returncode == 0, r.stderr[-3000:]
    return ast.literal_eval(r.stdout.strip().splitlines()[-1]), r.stderr


DISTANCES = """
import numpy as np, gbdist as gb
rng = np.random.default_rng(3)
X, Y = rng.random((6, 8)), rng.random((4, 8))
X[X < 0.5] = 0; Y[Y < 0.5] = 0
out = {}
for metric, params in (("cosine", {}), ("manhattan", {}), ("jaccard", {}), ("correlation", {}),
                       ("minkowski", {"p": 5.8}), ("minkowski", {"p": 3}), ("l2", {})):
    out[metric + repr(params)] = gb.pairwise_distances(X, Y, metric=metric, backend="cpu",
                                                       **params).tolist()
print(repr(dict(out=out, loaded=loaded(), analysis="gbdist.compiler.analysis" in sys.modules,
                library_read="gbdist.front.loader" in sys.modules)))
"""


def test_a_warm_process_answers_named_metrics_without_sympy_or_lark(tmp_path):
    cold, _ = _run(DISTANCES, tmp_path)
    assert "sympy" in cold["loaded"]  # the first process analysed
    warm, err = _run(DISTANCES, tmp_path)
    assert warm["out"] == cold["out"]
    assert "sympy" not in warm["loaded"] and "lark" not in warm["loaded"], warm["loaded"]
    assert not warm["analysis"] and not warm["library_read"]
    assert "discarding" not in err


EXPLAIN = """
import io, contextlib
from gbdist.cli.main import main
out = io.StringIO()
with contextlib.redirect_stdout(out):
    main(["explain", "manhattan"])
    main(["explain", "minkowski", "-p", "p=5.8"])
import gbdist as gb
md = gb.explain("cosine").to_markdown()
print(repr(dict(text=out.getvalue(), md=md, loaded=loaded())))
"""


def test_explain_of_a_named_metric_in_a_warm_process_is_the_stored_text(tmp_path):
    cold, _ = _run(EXPLAIN, tmp_path)
    warm, err = _run(EXPLAIN, tmp_path)
    assert warm["text"] == cold["text"] and warm["md"] == cold["md"]
    assert "proved symbolically (sympy)" in warm["text"]  # the proofs' text is stored with it
    assert "sympy" not in warm["loaded"] and "lark" not in warm["loaded"], warm["loaded"]
    assert "discarding" not in err


MINKOWSKI = """
from gbdist.compiler import analysis
calls = []
real = analysis._analyze
analysis._analyze = lambda *a: calls.append(repr(a[0])) or real(*a)
import numpy as np, gbdist as gb
X = np.array([[1.0, 0.0, 2.5], [0.0, 3.0, 1.0]])
D = gb.pairwise_distances(X, metric="minkowski", p=5.8, backend="cpu").tolist()
text = str(gb.explain("minkowski", p=5.8).products)  # the analysis itself, not its text
print(repr(dict(calls=calls, D=D)))
"""


def test_a_fractional_minkowski_is_analysed_once(tmp_path):
    """p = 5.8 is the exact fraction 6530219459687219 / 2**50: its analysis is stored like
    any other, and read back by a new process without analysing again or a warning."""
    first, _ = _run(MINKOWSKI, tmp_path)
    assert first["calls"]  # analysed here
    import shutil
    shutil.rmtree(tmp_path / "programs")  # so that the next process reads the analyses
    second, err = _run(MINKOWSKI, tmp_path)
    assert second["calls"] == [] and second["D"] == first["D"]
    assert "discarding" not in err


BFS = """
import numpy as np, scipy.sparse as sps
import gbdist as gb
from gbdist.algorithms import bfs_levels, bfs_parents
e = np.array([(0, 1), (0, 2), (1, 3), (2, 3), (3, 4), (5, 6)])
A = sps.csr_matrix((np.ones(len(e)), (e[:, 0], e[:, 1])), shape=(7, 7))
A = A + A.T
kw = {} if BACKEND is None else {"backend": BACKEND}
print(repr(dict(levels=bfs_levels(A, 0, **kw).tolist(), parents=bfs_parents(A, 0, **kw).tolist(),
                loaded=loaded(), library_read="gbdist.front.loader" in sys.modules)))
"""


def test_a_warm_bfs_imports_neither_sympy_nor_lark(tmp_path):
    code = BFS.replace("BACKEND", repr("cpu"))
    _run(code, tmp_path)
    warm, _ = _run(code, tmp_path)
    assert warm["levels"] == [0, 1, 1, 2, 3, -1, -1]
    assert warm["parents"] == [0, 0, 0, 1, 3, -1, -1]
    assert "lark" not in warm["loaded"] and "sympy" not in warm["loaded"], warm["loaded"]
    assert not warm["library_read"]


def test_a_warm_bfs_on_the_default_backend(tmp_path):
    code = BFS.replace("BACKEND", "None")
    _run(code, tmp_path)
    warm, _ = _run(code, tmp_path)
    assert warm["levels"] == [0, 1, 1, 2, 3, -1, -1]
    assert "lark" not in warm["loaded"] and not warm["library_read"]
    if "sympy" in warm["loaded"]:
        pytest.xfail("backend='auto': gbdist.graph.dispatch asks gbdist.backends.cuda whether a "
                     "device is there, and that package imports its sympy code generator")


REDEFINE = """
import numpy as np, gbdist as gb
X = np.array([[1.0, 0.0, 2.0], [0.0, 3.0, 1.0], [2.0, 2.0, 0.0]])
before = gb.pairwise_distances(X, metric="cosine", backend="cpu").tolist()
gb.define_metric("cosine", lambda A, B: gb.mxm(A, B.T, gb.semirings.plus_absdiff), replace=True)
after = gb.pairwise_distances(X, metric="cosine", backend="cpu").tolist()
explained = str(gb.explain("cosine"))
gb.clear_caches()
again = gb.pairwise_distances(X, metric="cosine", backend="cpu").tolist()
print(repr(dict(before=before, after=after, again=again, explained=explained)))
"""


def test_a_redefined_builtin_name_is_computed_anew_in_a_warm_process(tmp_path):
    _run(REDEFINE, tmp_path)
    warm, _ = _run(REDEFINE, tmp_path)
    assert warm["after"] == warm["again"] == [[0.0, 5.0, 5.0], [5.0, 0.0, 4.0], [5.0, 4.0, 0.0]]
    assert warm["before"] != warm["after"]
    assert "union-correction" in warm["explained"] and "norm2" not in warm["explained"]


def test_damaged_records_make_the_next_process_read_the_library_again(tmp_path):
    cold, _ = _run(DISTANCES, tmp_path)
    for f in (tmp_path / "programs").glob("*.json"):
        text = f.read_text()
        f.write_text(text[: len(text) // 3])  # every record truncated: the built-ins, the plans
    warm, err = _run(DISTANCES, tmp_path)
    assert warm["out"] == cold["out"] and warm["library_read"]
    assert "discarding entry" in err
    again, err = _run(DISTANCES, tmp_path)  # rewritten by the process before
    assert again["out"] == cold["out"] and not again["library_read"] and "discarding" not in err
    assert "sympy" not in again["loaded"]


def test_caching_off_still_answers(tmp_path):
    out, _ = _run(DISTANCES, tmp_path, GBDIST_CACHE_DIR="off")
    ref, _ = _run(DISTANCES, tmp_path)
    assert out["out"] == ref["out"] and not (tmp_path / "off").exists()


MXV = """
import numpy as np, scipy.sparse as sps
import gbdist as gb
from gbdist import graph as gr
rng = np.random.default_rng(5)
A = sps.random(300, 300, density=0.05, format="csr", random_state=rng)
x = rng.random(300)
G, xv = gb.Matrix(A), gb.Vector(x)
out = {name: gr.mxv(G, xv, getattr(gb.semirings, name), backend="compiled").to_dense(np.inf)
       .tolist() for name in ("plus_times", "min_plus")}
print(repr(dict(out=out, loaded=loaded())))
"""


def test_a_warm_process_runs_compiled_graph_kernels_without_sympy(tmp_path):
    """Issue 28: the compiled graph backend prints a kernel module's source from sympy
    formulas; a later process finds the module from the stored record instead
    (gbdist.backends.compiled.cache.load_recipe) and imports no sympy on its first mxv."""
    pytest.importorskip("numba")
    from gbdist import paths
    kernels = paths.cache_dir("cpu")  # machine code shared with the suite's (tests/conftest.py)
    if kernels is not None:
        os.symlink(kernels, tmp_path / "cpu", target_is_directory=True)
    cold, _ = _run(MXV, tmp_path, GBDIST_CPU_BACKEND="compiled")
    assert "sympy" in cold["loaded"]  # the first process generated the modules
    warm, err = _run(MXV, tmp_path, GBDIST_CPU_BACKEND="compiled")
    assert "numba" in warm["loaded"] and "sympy" not in warm["loaded"], warm["loaded"]
    assert "discarding" not in err
    import numpy as np
    import scipy.sparse as sps
    rng = np.random.default_rng(5)  # the brute force: the same operands in float64
    A = sps.random(300, 300, density=0.05, format="csr", random_state=rng)
    x = rng.random(300)
    D = A.toarray()
    want_min = np.where(D != 0, D + x, np.inf).min(axis=1)
    want_min[np.diff(A.indptr) == 0] = np.inf
    want_plus = np.where(np.diff(A.indptr) == 0, np.inf, A @ x)
    for got in (cold["out"], warm["out"]):
        np.testing.assert_allclose(got["plus_times"], want_plus, rtol=1e-12)
        np.testing.assert_allclose(got["min_plus"], want_min, rtol=1e-12)


GPU_GRAPH = """
import numpy as np, scipy.sparse as sps, cupyx.scipy.sparse as cps
import gbdist as gb
from gbdist import algorithms as alg, graph as gr
A = sps.random(60, 60, density=0.1, random_state=2, format="csr")
A = ((A + A.T) > 0).astype(np.float64)
M = gb.Matrix(cps.csr_matrix(A))
out = dict(tri=int(alg.triangle_count(M)),
           mxm=int(gr.mxm(M, M, gb.semirings.min_plus).nvals),
           mxv=gr.mxv(M, gb.Vector(np.arange(60.0)).to_device(), gb.semirings.plus_times).to_dense(0.0).tolist())
print(repr(dict(out=out, loaded=loaded())))
"""


@pytest.mark.gpu
def test_a_warm_process_runs_cuda_graph_kernels_without_sympy(tmp_path):
    """The CUDA graph kernels' functor is printed from sympy formulas; a later process finds
    its text from the stored record (gbdist.backends.cuda.graph_functor.stored_functor) and
    the compiled modules on disk: a GPU triangle count, mxm and mxv import no sympy (the
    first triangle count of a fresh process spent 3.4 of 3.6 s importing it, 2026-11-28 (i)).
    Answers against SciPy and networkx."""
    nx = pytest.importorskip("networkx")
    import numpy as np
    import scipy.sparse as sps
    cold, _ = _run(GPU_GRAPH, tmp_path)
    assert "sympy" in cold["loaded"]  # the first process printed the functors
    warm, err = _run(GPU_GRAPH, tmp_path)
    assert "sympy" not in warm["loaded"], warm["loaded"]
    assert "discarding" not in err
    A = sps.random(60, 60, density=0.1, random_state=2, format="csr")
    A = ((A + A.T) > 0).astype(np.float64)
    G = nx.from_scipy_sparse_array(A)
    G.remove_edges_from(nx.selfloop_edges(G))
    want = dict(tri=sum(nx.triangles(G).values()) // 3, mxm=int((A @ A).nnz),
                mxv=(A @ np.arange(60.0)).tolist())
    for got in (cold["out"], warm["out"]):
        assert got["tri"] == want["tri"] and got["mxm"] == want["mxm"]
        np.testing.assert_allclose(got["mxv"], want["mxv"], rtol=1e-12)
