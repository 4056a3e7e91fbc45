"""The compiled CPU backend (Numba) against the NumPy oracle (backends/cpu.py).

Everything goes through the public path: ``backend="compiled"`` against
``backend="cpu"`` with ``GBDIST_CPU_BACKEND=numpy`` (the oracle, whatever the
environment the suite runs in). One differential test runs every named metric, and every strategy the planner
produces, through both backends on random sparse inputs with empty rows,
explicit zeros, duplicates (summed), negative values; float32 and float64 values,
int32 and int64 indices. Kernels are compiled once per plan and type and shared
by the tests (Numba's in-process dispatchers). Top-k selection is checked
against a brute-force sort.
"""
from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest
from metric_cases import fit_columns
import scipy.sparse as sps

pytest.importorskip("numba")

import gbdist as gb  # noqa: E402
from gbdist.algebra import ops
from gbdist.compiler import ir
from gbdist import runtime  # noqa: E402
from gbdist.backends.compiled import CompiledCPUBackend, generated  # noqa: E402
from gbdist.backends.cpu import CPUBackend  # noqa: E402
from gbdist.errors import BackendError, DomainError, InputError  # noqa: E402
from gbdist.pairwise import metric_program  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def sparse(seed: int, m: int, k: int, density: float = 0.25, dtype=np.float64, itype=np.int32,
           nonneg: bool = False) -> sps.csr_matrix:
    """Random CSR with empty rows, explicit stored zeros, summed duplicates, repeated
    values (ties) and, unless ``nonneg``, negative values."""
    rng = np.random.default_rng(seed)
    nnz = int(m * k * density)
    rows = rng.integers(0, m, nnz)
    rows = rows[rows % 5 != 1]  # every fifth row empty
    cols = rng.integers(0, k, rows.size)
    vals = np.where(rng.random(rows.size) < 0.4, rng.integers(1, 4, rows.size),
                    rng.uniform(0.05, 2.0, rows.size))
    if not nonneg:
        vals = vals * np.where(rng.random(rows.size) < 0.4, -1.0, 1.0)
    vals[rng.random(rows.size) < 0.08] = 0.0  # explicit zeros
    # duplicates: the same (row, col) twice, summed by the COO -> CSR conversion
    c = sps.coo_matrix((np.r_[vals, vals[:7]], (np.r_[rows, rows[:7]], np.r_[cols, cols[:7]])),
                       shape=(m, k)).tocsr()
    c.sum_duplicates()
    c = sps.csr_matrix((c.data.astype(dtype), c.indices, c.indptr), shape=(m, k))
    c.indices, c.indptr = c.indices.astype(itype), c.indptr.astype(itype)  # SciPy would shrink int64
    assert c.indices.dtype == itype and c.data.dtype == dtype
    return c


@pytest.fixture(autouse=True)
def numpy_oracle(monkeypatch):
    """backend='cpu' is the NumPy oracle in these tests, whatever GBDIST_CPU_BACKEND says."""
    monkeypatch.setenv("GBDIST_CPU_BACKEND", "numpy")


def close(got, ref, rtol=1e-9, atol=1e-9):
    got, ref = np.asarray(got, dtype=np.float64), np.asarray(ref, dtype=np.float64)
    assert got.shape == ref.shape
    assert np.array_equal(np.isnan(got), np.isnan(ref)), "NaN in different places"
    scale = max(1.0, float(np.nanmax(np.abs(ref), initial=0.0)))
    np.testing.assert_allclose(got, ref, rtol=rtol, atol=atol * scale, equal_nan=True)


# ---------------------------------------------------------------------------
# every named metric, through the whole runtime path (validation, exact d(a, a), fixes)
# ---------------------------------------------------------------------------

X64 = sparse(1, 37, 23)
Y64 = sparse(2, 29, 23)


def _oracle(metric, X, Y):
    try:
        return gb.pairwise_distances(X, Y, metric=metric, backend="cpu"), (X, Y)
    except DomainError:  # metrics defined for nonnegative data
        X, Y = abs(X), (abs(Y) if Y is not None else None)
        return gb.pairwise_distances(X, Y, metric=metric, backend="cpu"), (X, Y)


@pytest.mark.parametrize("metric", gb.metric_names())
def test_every_metric_matches_the_oracle(metric):
    ref, (X, Y) = _oracle(metric, *fit_columns(metric, X64, Y64))
    ref_self, _ = _oracle(metric, X, None)
    got = gb.pairwise_distances(X, Y, metric=metric, backend="compiled")
    got_self = gb.pairwise_distances(X, None, metric=metric, backend="compiled")
    # several row tiles: the kernels read row blocks through views of the row pointers
    got_tiled = gb.pairwise_distances(X, Y, metric=metric, backend="compiled",
                                      working_memory="4096B")
    assert got.dtype == ref.dtype == np.float64
    close(got, ref)
    close(got_self, ref_self)
    np.testing.assert_array_equal(got_tiled, got)
    # the proven d(a, a) is the runtime's (backends/rows.py), written where the oracle writes it
    np.testing.assert_array_equal(np.diag(got_self), np.diag(ref_self))


def test_the_runtime_really_used_the_compiled_kernels():
    assert isinstance(runtime.get_backend("compiled"), CompiledCPUBackend)
    plan = metric_program("manhattan").plan
    gb.pairwise_distances(abs(X64), abs(Y64), metric="manhattan", backend="compiled")
    from gbdist.backends.compiled import _module
    assert _module(plan).gb_fused.signatures, "the fused kernel was never called"


# ---------------------------------------------------------------------------
# value and index types as they come
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("metric", ["cosine", "chebyshev"])
@pytest.mark.parametrize("dtype,itype", [(np.float32, np.int32), (np.float64, np.int64)])
def test_value_and_index_types_are_kept(metric, dtype, itype):
    X = sparse(3, 31, 17, dtype=dtype, itype=itype)
    Y = sparse(4, 19, 17, dtype=dtype, itype=itype)
    plan = metric_program(metric).plan
    ref = runtime.run(plan, {"A": X, "B": Y}, backend="cpu")
    got = runtime.run(plan, {"A": X, "B": Y}, backend="compiled")
    assert got.dtype == ref.dtype == np.dtype(dtype)
    close(got, ref, rtol=1e-5 if dtype == np.float32 else 1e-9,
          atol=1e-5 if dtype == np.float32 else 1e-9)
    from gbdist.backends.compiled import _module
    # the kernel reads the values as the runtime bound them (gbdist.runtime.bind: float64
    # on the host today) and every index array in one type, int32 here (it fits)
    bound = runtime.bind(plan, {"A": X, "B": Y})
    vname = str(bound.data[("A", False)].dtype)
    one_d = [{str(a.dtype) for a in sig if getattr(a, "ndim", 0) == 1}
             for sig in _module(plan).gb_fused.signatures]
    assert {vname, "int32"} in one_d, one_d
    assert not any("int64" in kinds for kinds in one_d), one_d


def test_one_signature_serves_index_and_result_types():
    """int32 and int64 indices, mixed between the operands, and float32 / float64 results
    all run the fused kernel compiled once (one_index_type; a float64 tile cast once)."""
    from gbdist.backends.compiled import _module, one_index_type
    plan = metric_program("braycurtis").plan
    X64 = sparse(3, 31, 17, dtype=np.float64, itype=np.int64)
    Y32 = sparse(4, 19, 17, dtype=np.float64, itype=np.int32)
    for dt in (np.float64, np.float32):
        for X, Y in ((X64, Y32), (Y32, X64), (X64, X64)):
            got = runtime.run(plan, {"A": X, "B": Y}, backend="compiled", dtype=dt)
            assert got.dtype == np.dtype(dt)
            oracle = runtime.run(plan, {"A": X, "B": Y}, backend=CPUBackend(), dtype=dt)
            close(got, oracle, rtol=1e-6 if dt == np.float32 else 1e-12, atol=1e-6)
    assert len(_module(plan).gb_fused.signatures) == 1
    # an operand already in the common type is not copied
    Z = sparse(2, 5, 17, dtype=np.float64, itype=np.int32)
    assert one_index_type({"A": Z})["A"] is Z
    w = one_index_type({"A": Z, "B": X64})
    assert w["A"] is Z and w["B"].indices.dtype == np.int32 and w["B"].indptr.dtype == np.int32
    assert np.array_equal(w["B"].indices, X64.indices)


# ---------------------------------------------------------------------------
# every strategy the planner produces (beyond the named metrics)
# ---------------------------------------------------------------------------

A, B = gb.matrices("A B")
V = gb.vectors("x")
steep = gb.op("steep_cpu_test", lambda x, y: gb.exp(abs(x - y) / 4))
shifted = gb.op("shifted_cpu_test", lambda x, y: abs(x - y) + 1)
ratio = gb.op("ratio_cpu_test", lambda x, y: x / (y - 1))  # ±inf, and 0/0 = NaN, at y = 1
EXPRESSIONS = {
    # two-pass unions with ⊕ = min / max: min-plus (corner f(0, 0) = 0 not absorbed: columns
    # stored in neither row count), max-times, an absorbed corner, an apply chain on A
    "ordered_unions": (gb.mxm(A, B.T, gb.semiring(ops.plus, ops.min))
                       + 2 * gb.mxm(A, B.T, gb.semiring(ops.times, ops.max))
                       - gb.mxm(A, B.T, gb.semiring(shifted, ops.max))
                       + gb.mxm(gb.apply(ops.abs, A), B.T, gb.semiring(ops.absdiff, ops.max))),
    # two-pass union summed directly (⊕ = plus is not idempotent), corner exp(0) = 1
    "direct_union": gb.mxm(A, B.T, gb.semiring(steep, ops.plus)),
    # intersections: a constant op, two products over one pair, a chain inside
    "intersections": (gb.mxm(A, B.T, gb.semiring(ops.times, ops.plus))
                      / (1 + gb.mxm(gb.apply(ops.square, A), B.T, gb.semiring(ops.absdiff, ops.plus)))
                      + gb.mxm(A, B.T, gb.semiring(ops.pair, ops.plus))),
    # outputs that are not (i, j) grids: mxv (intersection and min-plus union), reductions
    "mxv": (gb.mxv(A, V, gb.semiring(ops.times, ops.plus))
            + gb.mxv(A, V, gb.semiring(ops.plus, ops.min))),
    "reductions": gb.reduce(A, ops.max) + gb.reduce(gb.apply(ops.exp, A), ops.times),
    # IEEE values as NumPy gives them: log of <= 0 (NaN, -inf), x/0, NaN through max
    "ieee": (gb.log(gb.mxm(A, B.T, gb.semiring(ops.times, ops.plus)))
             / gb.mxm(A, B.T, gb.semiring(ops.times, ops.plus))
             + gb.mxm(A, B.T, gb.semiring(ratio, ops.max))),
}


@pytest.mark.parametrize("name", sorted(EXPRESSIONS))
def test_every_strategy_matches_the_oracle(name):
    expr = EXPRESSIONS[name]
    plan = gb.compile(expr).plan
    X = sparse(5, 33, 21) * 0.5
    inputs = {"A": X}
    if "B" in {s.name for s in ir.symbols(plan.expr)}:
        inputs["B"] = sparse(6, 27, 21) * 0.5
    if "x" in {s.name for s in ir.symbols(plan.expr)}:
        inputs["x"] = np.random.default_rng(7).uniform(-1, 1, 21)
    ref = runtime.run(plan, inputs, backend="cpu")
    got = runtime.run(plan, inputs, backend="compiled")
    close(got, ref)
    assert np.isfinite(ref).any()  # the comparison is not between two empty answers
    if name == "ieee":  # the conventions were exercised: NaN and ±inf in the same places
        assert np.isnan(ref).any() and np.isinf(ref).any()
        np.testing.assert_array_equal(np.isinf(got), np.isinf(ref))


def test_strategies_cover_the_planner():
    """The expressions above reach every primitive and ⊕ the compiled kernels have."""
    seen = set()
    for expr in EXPRESSIONS.values():
        gen = generated(gb.compile(expr).plan)
        for step, _, _, how in gen.products:
            union = how != "scatter"
            direct = union and not step.node.add.idempotent
            seen.add((how, step.node.add.name, direct, union and step.node.corner_absorbed))
        seen.update(("reduce", st.node.monoid.name) for st, _, _ in gen.reductions)
    for want in [("ordered-union", "min", False, False), ("ordered-union", "max", False, True),
                 ("union", "plus", True, False), ("scatter", "plus", False, False),
                 ("reduce", "max"), ("reduce", "times")]:
        assert want in seen, want


def test_the_printer_refuses_what_it_cannot_print():
    import sympy as sp
    from gbdist.backends.compiled.printer import formula
    from gbdist.errors import BackendError
    x = sp.Symbol("x", real=True)
    assert formula(sp.Piecewise((x, x > 0), (0, True))) == "(x if (x > 0.0) else 0.0)"
    assert formula(sp.Max(x, 2)) in ("gb_max(x, 2.0)", "gb_max(2.0, x)")
    assert formula(sp.oo * 1) == "INF"
    with pytest.raises(BackendError):
        formula(sp.sin(x))


def test_unsorted_and_duplicate_inputs_are_made_canonical():
    X = sparse(8, 12, 9)
    messy = sps.csr_matrix((np.r_[X.data, 1.5], np.r_[X.indices, X.indices[0]],
                            np.r_[X.indptr[:2] + 0, X.indptr[2:] + 1]), shape=X.shape)
    messy.has_sorted_indices = False
    plan = metric_program("manhattan").plan
    ref = runtime.run(plan, {"A": messy, "B": messy}, backend="cpu")
    got = runtime.run(plan, {"A": messy, "B": messy}, backend="compiled")
    close(got, ref)


# ---------------------------------------------------------------------------
# top-k selection and merging for kNN
# ---------------------------------------------------------------------------

def _brute_topk(D, k, offset=0):
    out_d, out_i = [], []
    for row in D:
        order = sorted(range(len(row)), key=lambda c: (np.isnan(row[c]), row[c] if not np.isnan(row[c]) else 0, c))
        out_d.append([row[c] for c in order[:k]])
        out_i.append([c + offset for c in order[:k]])
    return np.array(out_d, dtype=D.dtype).reshape(len(D), -1), np.array(out_i).reshape(len(D), -1)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("k", [1, 5, 40])
def test_select_k_matches_a_full_sort(dtype, k):
    rng = np.random.default_rng(k)
    D = rng.integers(0, 6, (23, 31)).astype(dtype)  # many ties
    D[rng.random(D.shape) < 0.1] = np.nan
    D[3] = np.nan
    be = CompiledCPUBackend()
    d, i = be.select_k(D, k, offset=100)
    rd, ri = _brute_topk(D, min(k, D.shape[1]), offset=100)
    assert d.dtype == D.dtype and i.dtype == np.int64
    np.testing.assert_array_equal(i, ri)
    np.testing.assert_array_equal(d, rd)
    # np.argsort agrees where there are no NaNs (stable: ties by column)
    ok = ~np.isnan(D).any(axis=1)
    order = np.argsort(D[ok], axis=1, kind="stable")[:, :min(k, D.shape[1])]
    np.testing.assert_array_equal(i[ok], order + 100)


def test_merge_k_keeps_the_best_of_both():
    rng = np.random.default_rng(3)
    D = rng.integers(0, 9, (17, 40)).astype(np.float64)
    D[rng.random(D.shape) < 0.05] = np.nan
    be = CompiledCPUBackend()
    d1, i1 = be.select_k(D[:, :25], 6)
    d2, i2 = be.select_k(D[:, 25:], 6, offset=25)
    d, i = be.merge_k(d1, i1, d2, i2, 6)
    rd, ri = _brute_topk(D, 6)
    np.testing.assert_array_equal(i, ri)
    np.testing.assert_array_equal(d, rd)


# ---------------------------------------------------------------------------
# the module cache and the lazy import
# ---------------------------------------------------------------------------

def test_generated_module_is_cached_on_disk(tmp_path, monkeypatch):
    from gbdist.backends.compiled import cache
    monkeypatch.setenv("GBDIST_CACHE_DIR", str(tmp_path))
    src = generated(metric_program("canberra").plan).source + "\n# a copy for this test\n"
    mod = cache.load(src)
    files = list((tmp_path / "cpu").glob("gb_*.py"))
    assert len(files) == 1 and files[0].read_text() == src
    assert os.path.samefile(mod.__file__, files[0])
    assert cache.load(src) is mod
    assert not list((tmp_path / "cpu").glob(".tmp-*"))  # no temporary file left behind


def test_concurrent_writers_leave_one_complete_module(tmp_path):
    code = ("import sys; from gbdist.backends.compiled import cache; "
            "src = '# ' + 'x' * 200000 + '\\nVALUE = 7\\n'; "
            "m = cache.load(src); assert m.VALUE == 7; print(m.__file__)")
    env = dict(os.environ, GBDIST_CACHE_DIR=str(tmp_path), PYTHONPATH=ROOT)
    procs = [subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(3)]
    outs = [p.communicate(timeout=120) for p in procs]
    assert all(p.returncode == 0 for p in procs), [o[1][-500:] for o in outs]
    assert len({o[0].strip() for o in outs}) == 1
    files = list((tmp_path / "cpu").glob("gb_*.py"))
    assert len(files) == 1 and files[0].read_text().endswith("VALUE = 7\n")


def test_import_gbdist_does_not_import_numba():
    code = "import sys, gbdist; print('numba' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                         env=dict(os.environ, PYTHONPATH=ROOT))
    assert out.returncode == 0, out.stderr[-500:]
    assert out.stdout.strip() == "False"


def test_cache_off_uses_a_private_directory(monkeypatch, tmp_path):
    from gbdist.backends.compiled import cache
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("GBDIST_CACHE_DIR", "off")
    d = cache.cache_dir()
    assert not os.path.exists(tmp_path / "off") and os.path.isdir(d)
    assert os.path.commonpath([d, str(tmp_path)]) != str(tmp_path)


@pytest.mark.parametrize("metric", ["manhattan", "chebyshev"])
def test_knn_through_the_compiled_backend(metric):
    """gbdist.knn reads tiles from ``run_tile`` and selects with the compiled top-k: same
    answer as the oracle, with row and column tiles."""
    X, Y = sparse(9, 41, 23), sparse(10, 57, 23)
    ref = gb.knn(X, Y, k=6, metric=metric, backend="cpu")
    ref_self = gb.knn(X, None, k=4, metric=metric, backend="cpu")
    got = gb.knn(X, Y, k=6, metric=metric, backend="compiled", working_memory=0.01)
    got_self = gb.knn(X, None, k=4, metric=metric, backend="compiled")
    for (gd, gi), (rd, ri) in ((got, ref), (got_self, ref_self)):
        np.testing.assert_array_equal(gi, ri)
        close(gd, rd)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_gets_its_own_threads():
    """The thread pool is per process: a child forked after a run still runs (no hang)."""
    import multiprocessing as mp
    X = sparse(12, 300, 11)
    ref = _compiled_manhattan(X)
    ctx = mp.get_context("fork")
    with ctx.Pool(1) as pool:
        got = pool.apply_async(_compiled_manhattan, (X,)).get(timeout=120)
    np.testing.assert_array_equal(got, ref)


def _compiled_manhattan(X):
    return gb.pairwise_distances(X, X, metric="manhattan", backend="compiled")


# ---------------------------------------------------------------------------
# selection: backend="compiled", GBDIST_CPU_BACKEND
# ---------------------------------------------------------------------------

def test_gbdist_cpu_backend_chooses_what_cpu_runs(monkeypatch):
    monkeypatch.setenv("GBDIST_CPU_BACKEND", "compiled")
    assert isinstance(runtime.get_backend("cpu"), CompiledCPUBackend)
    monkeypatch.setenv("GBDIST_CPU_BACKEND", "numpy")
    be = runtime.get_backend("cpu")
    assert isinstance(be, CPUBackend) and not isinstance(be, CompiledCPUBackend)
    monkeypatch.delenv("GBDIST_CPU_BACKEND")
    # unset: the compiled backend when Numba imports (it does here), for "cpu" and for
    # "auto" without a GPU
    assert isinstance(runtime.get_backend("cpu"), CompiledCPUBackend)
    from gbdist.backends.cuda import unavailable_reason
    if unavailable_reason() is not None:
        assert isinstance(runtime.get_backend("auto"), CompiledCPUBackend)
    monkeypatch.setitem(sys.modules, "numba", None)  # import numba raises ImportError
    be = runtime.get_backend("cpu")  # without Numba: the NumPy backend, no error
    assert isinstance(be, CPUBackend) and not isinstance(be, CompiledCPUBackend)
    monkeypatch.delitem(sys.modules, "numba")
    monkeypatch.setenv("GBDIST_CPU_BACKEND", "fortran")
    with pytest.raises(InputError, match="GBDIST_CPU_BACKEND"):
        runtime.get_backend("cpu")


def test_compiled_without_numba_names_numba(monkeypatch):
    monkeypatch.setitem(sys.modules, "numba", None)  # import numba raises ImportError
    with pytest.raises(BackendError, match="[Nn]umba"):
        gb.pairwise_distances(X64, metric="cosine", backend="compiled")
    monkeypatch.setenv("GBDIST_CPU_BACKEND", "compiled")
    with pytest.raises(BackendError, match="[Nn]umba"):
        runtime.get_backend("cpu")


def test_compiled_refuses_a_cuda_strategy():
    plan = metric_program("cosine").plan
    with pytest.raises(InputError, match="strategy"):
        runtime.run(plan, {"A": X64, "B": Y64}, backend="compiled", strategy="gather")


# ---------------------------------------------------------------------------
# the runtime's row conditioning, compiled (registered when the backend is chosen)
# ---------------------------------------------------------------------------

def test_compiled_row_conditioning_gives_numpys_values(monkeypatch):
    """helpers.condition_rows against rows.condition_rows's NumPy path, bit for bit: empty
    rows, rows storing every column (shifted by their mean), values near the ends of the
    range (the scale is skipped where it would underflow or overflow), ±inf, NaN, float32."""
    from gbdist.backends import rows
    from gbdist.backends.compiled import condition_host
    from gbdist.runtime.invariance import Invariance
    monkeypatch.setattr(rows, "_HOST_CONDITION", [])  # rows.condition_rows: NumPy only
    rng = np.random.default_rng(7)
    checked = 0
    for trial in range(150):
        m, k = int(rng.integers(0, 8)), int(rng.integers(1, 6))
        dtype = (np.float32, np.float64)[trial % 2]
        X = sps.random(m, k, density=rng.uniform(0, 1), format="csr", dtype=dtype,
                       random_state=int(rng.integers(1 << 30)))
        X.data *= dtype(10.0 ** int(rng.integers(-300, 300) if dtype == np.float64
                                     else rng.integers(-30, 30)))
        if X.nnz and rng.random() < 0.3:
            X.data[int(rng.integers(X.nnz))] = np.inf
        if X.nnz and rng.random() < 0.3:  # NumPy's maximum propagates it: row left unscaled
            X.data[int(rng.integers(X.nnz))] = np.nan
        for shift in (False, True):
            for scale in (False, True):
                inv = Invariance(scale=scale, shift=shift, detail="test")
                if not (shift or scale):
                    continue
                with np.errstate(all="ignore"):
                    ref = rows.condition_rows(X.indptr, X.data, k, inv)
                    got = condition_host(X.indptr, X.data, k, inv)
                assert got.dtype == ref.dtype
                np.testing.assert_array_equal(got, ref)
                checked += 1
    assert checked == 450


def test_a_sum_too_long_for_python_s_compiler_is_a_typed_error():
    """A 3,000-term sum within the language's limits: CPython's compiler recurses on the
    generated expression; the compiled backend says so as a BackendError (issue 24), never
    a raw RecursionError; the NumPy evaluator computes it."""
    pytest.importorskip("numba")
    n = 3000
    terms = " + ".join("x" if i % 2 else "y" for i in range(n))
    gb.define(f"op longsum_t(x, y) = {terms}\n"
                     "metric longsum_m(A, B) = mxm(A, B.T, semiring(longsum_t, plus))\n")
    X = sps.random(5, 4, density=0.6, random_state=0, format="csr")
    dense = X.toarray()
    want = np.array([[sum((n // 2) * (a + b) for a, b in zip(r, s)) for s in dense] for r in dense])
    try:
        got = gb.pairwise_distances(X, metric="longsum_m", backend="compiled")
    except gb.GbdistError as e:
        assert "compiled CPU backend" in str(e)
    else:
        np.testing.assert_allclose(got, want, rtol=1e-12)
    # backend="cpu" is the NumPy evaluator here (this file's fixture)
    np.testing.assert_allclose(gb.pairwise_distances(X, metric="longsum_m", backend="cpu"),
                               want, rtol=1e-12)


def test_direct_plan_does_not_reuse_the_rewritten_plans_kernels():
    """The accuracy rule's direct plan has the expression of the plan it replaces: the
    compiled kernels are keyed by the lowering too. Run the rewritten haversine plan first
    (as the numeric checks do, no accuracy rule), then the direct one the rule picks for
    close pairs (3 columns): scikit-learn's answer to 1e-11, not the expansion's 3e-9."""
    from sklearn.metrics.pairwise import haversine_distances
    from gbdist.pairwise import metric_program
    from gbdist.runtime.bind import bind_operands
    from gbdist.runtime.core import get_backend
    from gbdist.runtime.memory import budget_of
    from gbdist.runtime.tiles import evaluate
    rng = np.random.default_rng(11)
    X = np.column_stack([rng.uniform(-1.2, 1.2, 80), rng.uniform(-3, 3, 80)])
    Y = X + 1e-3 * rng.normal(size=X.shape)
    plan = metric_program("haversine").plan
    be = get_backend("compiled")
    b = bind_operands(plan, {"A": sps.csr_matrix(X), "B": sps.csr_matrix(Y)}, drop_zeros=True)
    evaluate(be, be.prepare(b, exact=False), b, budget_of(be, None, result=True))
    got = np.diagonal(gb.pairwise_distances(X, Y, metric="haversine", backend="compiled"))
    want = np.diagonal(haversine_distances(X, Y))
    np.testing.assert_allclose(got, want, rtol=1e-11, atol=0)
