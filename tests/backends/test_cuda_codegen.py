"""CI guard for the CUDA code generator: every kernel it emits for every
built-in metric, in both dtypes, compiles for sm_90 with nvcc (no GPU needed)."""
import os
import shutil
import subprocess
import tempfile

import numpy as np
import pytest

import gbdist as gb
from gbdist.backends.cuda.codegen import CudaPrinter, generate, scalar, standalone_source
from gbdist.pairwise import metric_program

NVCC = shutil.which("nvcc")
CASES = [(m, {}) for m in sorted(gb.metric_names())] + [("minkowski", {"p": 4.0}),
                                                         ("minkowski", {"p": 3.0})]


def _nvcc(source: str):
    with tempfile.TemporaryDirectory() as d:
        src = os.path.join(d, "k.cu")
        with open(src, "w") as f:
            f.write(source)
        return subprocess.run([NVCC, "--ptx", "-arch=sm_90", "-std=c++17", "-o",
                               os.path.join(d, "k.ptx"), src], capture_output=True, text=True)


@pytest.mark.nvcc
@pytest.mark.parametrize("metric,params", CASES, ids=[f"{m}{p.get('p', '')}" for m, p in CASES])
def test_every_metric_compiles(metric, params):
    sources = []
    for dt, acc in ((np.float32, None), (np.float64, None), (np.float32, np.float64)):
        gen = generate(metric_program(metric, **params).plan, dt, acc)
        sources.append(standalone_source(gen, 4, "int"))
    gen64 = generate(metric_program(metric, **params).plan, np.float32)
    sources.append(standalone_source(gen64, 8, "long long"))
    # NVRTC has no <math.h>: no M_* macros, HUGE_VAL, INFINITY or NAN may appear
    # (nvcc would accept them, so check the text too).
    import re
    for s in sources:
        assert not re.search(r"\bM_[A-Z0-9_]+\b|\bHUGE_VAL\b|\bINFINITY\b|\bNAN\b", s)
    # One translation unit per dtype/index type (Spec names would clash if joined). By
    # default each metric compiles float32 (int indices) and one of the three others in
    # turn, so every variant is compiled for a third of the metrics (nvcc takes ~1.5 s a
    # unit: the four for every metric were 5 minutes of the suite); GBDIST_SLOW_TESTS=1: all.
    if os.environ.get("GBDIST_SLOW_TESTS") != "1":
        turn = 1 + CASES.index((metric, params)) % 3
        sources = [sources[0], sources[turn]]
    for s in sources:
        r = _nvcc(s)
        assert r.returncode == 0, r.stderr[-3000:]


def test_printer_picks_float_or_double_math():
    import sympy as sp
    x = sp.Symbol("x", real=True)
    e = sp.sqrt(x) + sp.log(x) + sp.Abs(x) + x ** 2
    f32 = scalar(e, CudaPrinter(np.float32))
    f64 = scalar(e, CudaPrinter(np.float64))
    assert "sqrtf(x)" in f32 and "logf(x)" in f32 and "fabsf(x)" in f32 and "(x)*(x)" in f32
    assert "sqrt(x)" in f64 and "sqrtf" not in f64 and "logf" not in f64


def test_printer_refuses_unknown_functions():
    import sympy as sp
    x = sp.Symbol("x", real=True)
    with pytest.raises(gb.BackendError):
        scalar(sp.zeta(x), CudaPrinter(np.float64))


def test_float32_data_accumulates_in_double():
    """float32 storage, double accumulators, formulas and epilogue (issue 8 item 3)."""
    gen = generate(metric_program("euclidean").plan, np.float32, np.float64)
    spec = gen.source[gen.source.index("struct Spec "):]
    assert "typedef float gb_real;" in gen.source and "typedef double gb_acc;" in gen.source
    assert "typedef double A;" in spec and "static A epilogue(A* acc" in spec
    assert "sqrtf" not in spec and "sqrt(" in spec
    assert "const A x = (A)d;" in spec


def test_epilogue_is_fused_into_the_product_kernel():
    gen = generate(metric_program("cosine").plan, np.float32)
    spec = gen.source[gen.source.index("struct Spec "):]
    assert "sqrtf(colred[0 * n_left + i])" in spec and "rowred[0 * n_right + j]" in spec
    assert len(gen.accumulators) == 1 and len(gen.reductions) == 2


def test_divisions_in_mixed_precision_products_use_gb_div():
    """⊗ over float32 data evaluated in float64 prints its divisions as gb_div; float64
    data and float32 accumulation keep the native division (docs/cuda.md)."""
    from gbdist.pairwise import metric_program

    def spec(dt, acc):  # canberra's g whole (split=False: no float split of f)
        src = generate(metric_program("canberra").plan, dt, acc, split=False).source
        body = src[src.index("struct Spec"):]
        return body[:body.index("\n};\n")]

    mixed = spec(np.float32, np.float64)
    assert mixed.count("gb_div(fabs(x - y), fabs(x) + fabs(y))") == 2  # gather step, scatter step
    assert "fabs(x - y)/" not in mixed
    assert "gb_div" not in spec(np.float64, None) and "fabs(x - y)/(fabs(x) + fabs(y))" in spec(np.float64, None)
    assert "gb_div" not in spec(np.float32, None) and "fabsf(x - y)/(fabsf(x) + fabsf(y))" in spec(np.float32, None)


def test_float_split_prints_f_in_float():
    """canberra's union correction carries a float split (compiler/plan.float_split): with
    float32 data and float64 accumulation, f = |x − y|/(|x| + |y|) runs in float, and so
    does h = −[x ≠ 0] − [y ≠ 0] (exact in float), summed in double; without the split
    (inputs outside 2^±32: the backend checks) all of g is in double."""
    from gbdist.backends.cuda import codegen
    from gbdist.pairwise import metric_program

    plan = metric_program("canberra").plan
    gen = generate(plan, np.float32, np.float64)
    assert gen.split_exponent == 32
    assert gen.source.count("fabsf(xs - ys)/(fabsf(xs) + fabsf(ys))") == 1  # scatter
    assert gen.source.count("fabsf(d - s)/(fabsf(d) + fabsf(s))") == 1  # gather
    assert "gb_div(fabs" not in gen.source[gen.source.index("struct Spec"):]
    wide = generate(plan, np.float32, np.float64, split=False)
    assert wide.split_exponent is None and "gb_div(fabs(x - y), fabs(x) + fabs(y))" in wide.source
    for dt, acc in ((np.float64, None), (np.float32, None)):
        assert generate(plan, dt, acc).split_exponent is None
    assert generate(metric_program("cosine").plan, np.float32, np.float64).split_exponent is None
    codegen.FLOAT_SPLIT = False
    try:
        assert generate(plan, np.float32, np.float64).split_exponent is None
    finally:
        codegen.FLOAT_SPLIT = True


def test_max_and_min_monoids_scatter_with_integer_atomics():
    """A max ⊕ (chebyshev's union scatter) prints gb_atomic_max, plus keeps atomicAdd; the
    compare-and-swap loop is left for other monoids."""
    cheb = generate(metric_program("chebyshev").plan, np.float32).source
    assert "gb_atomic_max(&acc[j]" in cheb and "gb_atomic_combine<Comb0>(&acc[j]" not in cheb
    cos = generate(metric_program("cosine").plan, np.float32).source
    assert "atomicAdd(&acc[" in cos and "gb_atomic_max" not in cos.split("struct Spec")[-1]


@pytest.mark.parametrize("descending", [False, True])
def test_sorted_union_key_words_order_like_the_floats(descending):
    """The sorted union's per-row order (strategies._sorted_perm, float32): one argsort of
    64-bit words, row above the key's order-preserving bits, equals NumPy's lexsort by
    (row, key) on keys with ±0, ±inf, subnormals, huge values and ties."""
    from gbdist.backends.cuda.strategies import _ordered_bits
    rng = np.random.default_rng(3)
    special = np.array([0.0, -0.0, np.inf, -np.inf, 1e-45, -1e-45, 3.4e38, -3.4e38, 1.0, 1.0],
                       dtype=np.float32)
    keys = np.concatenate([special, (rng.standard_normal(3000)
                                     * np.float32(10.0) ** rng.integers(-30, 30, 3000)).astype(np.float32),
                           rng.integers(-3, 3, 1000).astype(np.float32)])
    rows = np.sort(rng.integers(0, 40, keys.size)).astype(np.uint64)
    words = _ordered_bits(keys, descending) | (rows << np.uint64(32))
    perm = np.argsort(words, kind="stable")
    want = np.lexsort((-keys.astype(np.float64) if descending else keys, rows))
    assert np.array_equal(rows[perm], rows[want])
    got, ref = keys[perm].astype(np.float64), keys[want].astype(np.float64)
    assert np.array_equal(got, ref)  # equal as numbers (±0 compare equal)
