"""The device pruned search's epilogue kernel (gbdist/backends/cuda/pruned_values.py) against
the CuPy array path it replaces (pruned._Device.values, run here on NumPy): its generated
body, compiled as host C++ (g++, no contraction, as the kernel is built with --fmad=false),
at random pairs of rows, with and without the overlap pass's step values, for every named
metric whose plan it prints, in float32 and float64. The kernel itself runs in the GPU
tests (tests/neighbors/test_pruning_gpu.py against brute force)."""
import ctypes
import re
import shutil
import subprocess
import types

import numpy as np
import pytest

import gbdist as gb
from gbdist.backends.cuda import pruned as P
from gbdist.backends.cuda import pruned_values as PV
from gbdist.compiler import ir
from gbdist.errors import BackendError
from gbdist.pairwise import metric_program
from gbdist.resources import read

GXX = shutil.which("g++")
pytestmark = pytest.mark.skipif(GXX is None, reason="no g++")
# issue 29's metrics: each must print (the pruned search's slow ones were these)
MUST = ("cosine", "manhattan", "canberra", "hellinger", "jensenshannon", "chebyshev")


A, B = gb.matrices("A B")
_steep = gb.op("steep_pruned_values_test", lambda x, y: gb.exp(abs(x - y) / 4))
_shifted = gb.op("shifted_pruned_values_test", lambda x, y: abs(x - y) + 1)
# two-pass unions beyond the named metrics' (chebyshev: max, corner absorbed): min-plus (a
# corner not absorbed: uni < K), max of a shifted op, plus summed directly (K − uni
# corners)
USER = {
    "ordered_unions": (gb.mxm(A, B.T, gb.semiring(gb.ops.plus, gb.ops.min))
                       - gb.mxm(A, B.T, gb.semiring(_shifted, gb.ops.max))),
    "direct_union": gb.mxm(A, B.T, gb.semiring(_steep, gb.ops.plus)),
}


def _plans():
    for metric in gb.metric_names():
        try:
            yield metric, metric_program(metric).plan
        except Exception:  # noqa: BLE001 - needs parameters (minkowski's p, weights...)
            continue
    for name, expr in USER.items():
        yield name, gb.compile(expr).plan


def _ev(plan, dtype, rng, m=40, n=50, ncols=30):
    mats = [st for st in plan.steps if isinstance(st.node, (ir.Intersect, ir.TwoPassUnion))]
    col = [st.name for st in plan.steps if st.kind == "col"]
    row = [st.name for st in plan.steps if st.kind == "row"]

    def summ(size):  # row summaries: some zero, equal, negative, -0.0, ±inf, NaN
        v = rng.uniform(0, 3, size)
        v[rng.random(size) < 0.2] = 0.0
        v[rng.random(size) < 0.1] = 1.0
        v[rng.random(size) < 0.05] = -0.0
        v[rng.random(size) < 0.05] *= -1.0
        for special in (np.inf, -np.inf, np.nan, 5e-324):
            v[rng.integers(0, size)] = special
        return v
    lsum = {name: summ(m) for name in col}
    rsum = {name: summ(n) for name in row}
    for st in mats:
        if isinstance(st.node, ir.TwoPassUnion):
            lsum[st.name + "a"], rsum[st.name + "b"] = summ(m), summ(n)
    lnnz = rng.integers(0, ncols + 1, m).astype(np.int64)
    rnnz = np.minimum(rng.integers(0, ncols + 1, n), ncols).astype(np.int64)
    lnnz[:8], rnnz[:8] = ncols // 2, ncols - ncols // 2  # pairs whose union is all K columns
    return types.SimpleNamespace(
        cp=np, plan=plan, dtype=np.dtype(dtype), mats=mats, ncols=ncols,
        col={k: lsum[k] for k in col}, row={k: rsum[k] for k in row}, lsum=lsum, rsum=rsum,
        lnnz=lnnz, rnnz=rnnz, fns=P._pointwise(np))


_CT = {"int64": "long long", "float64": "double", "bool": "bool"}
SCALARS = ("K", "size")  # passed as scalars (an ElementwiseKernel broadcasts them)


def _host_source(fname, ins, op, out="out", out_type="double"):
    """The kernel body as a host function over flat arrays (one element per call)."""
    decl, pre = [], []
    for p in ins.split(", "):
        parts = p.split()
        name = parts[-1]
        if parts[0] == "raw":
            decl.append(f"const {_CT[parts[1]]}* {name}")
        elif name in SCALARS:
            decl.append(f"{_CT[parts[0]]} {name}")
        else:
            decl.append(f"const {_CT[parts[0]]}* {name}_")
            pre.append(f"const {_CT[parts[0]]} {name} = {name}_[t];")
    return (f'extern "C" void {fname}(long long count, {", ".join(decl)}, {out_type}* {out}_) {{\n'
            f"  for (long long t = 0; t < count; ++t) {{\n    {' '.join(pre)}\n"
            f"    {out_type} {out};\n    {op}\n    {out}_[t] = {out};\n  }}\n}}\n")


def _header():
    """gb_max / gb_min as kernels/gbdist.cuh defines them, for the host."""
    cuh = read("kernels", "gbdist.cuh")
    defs = re.findall(r"template <typename T> __device__ __forceinline__ T gb_m(?:ax|in)\(.*?\n}\n",
                      cuh, flags=re.S)
    assert len(defs) == 2
    return ("#include <cmath>\n#include <cstring>\n#define GB_INF ((double)INFINITY)\n"
            "#define GB_NAN ((double)NAN)\n"
            + "".join(d.replace("__device__ __forceinline__", "inline") for d in defs))


def test_fused_epilogue_equals_the_array_path(tmp_path, monkeypatch):
    rng = np.random.default_rng(29)
    cases, funcs, printed, compiled, searched = [], [], set(), {}, set()
    for metric, plan in _plans():
        for dtype in (np.float32, np.float64):
            ev = _ev(plan, dtype, rng)
            for with_mats in (False, True):
                try:
                    ins, op, reads, uses_union = PV._source(ev, with_mats)
                except BackendError:
                    continue
                printed.add(metric)
                cases.append((metric, ev, with_mats))
                if (ins, op) not in compiled:
                    compiled[(ins, op)] = f"f{len(funcs)}"
                    funcs.append(_host_source(compiled[(ins, op)], ins, op))
                if not with_mats:  # the tie searches' kernel around the same body
                    sins, sop = PV.search_source(ins, op)
                    if (sins, sop) not in compiled:
                        compiled[(sins, sop)] = f"f{len(funcs)}"
                        funcs.append(_host_source(compiled[(sins, sop)], sins, sop, out="pos",
                                                  out_type="long long"))
    assert set(MUST) | set(USER) <= printed, (set(MUST) | set(USER)) - printed
    corners = {(st.node.add.ufunc.__name__, st.node.corner_absorbed)
               for _, ev, _ in cases for st in ev.mats if isinstance(st.node, ir.TwoPassUnion)}
    assert {("minimum", False), ("maximum", True), ("add", False)} <= corners, corners
    src = tmp_path / "values.cpp"
    src.write_text(_header() + "".join(funcs))
    lib = tmp_path / "values.so"
    r = subprocess.run([GXX, "-O1", "-ffp-contract=off", "-shared", "-fPIC", "-o", str(lib),
                        str(src)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-2000:]
    so = ctypes.CDLL(str(lib))
    kernels = {key: getattr(so, fname) for key, fname in compiled.items()}
    for metric, ev, with_mats in cases:
        count = 400
        pi = rng.integers(0, 40, count).astype(np.int64)
        pj = rng.integers(0, 50, count).astype(np.int64)
        pi[:4], pj[:4] = np.arange(4), np.arange(4)  # union of all K columns
        mats = None
        if with_mats:
            mats = {st.name: rng.uniform(0, 3, count) for st in ev.mats}
            for v in mats.values():
                v[rng.random(count) < 0.1] = 0.0
                v[rng.integers(0, count)] = np.nan
        with monkeypatch.context() as mp:
            mp.setattr(PV, "FUSED", False)
            want = P._Device.values(ev, pi, pj, mats)
        fused = _through(ev, kernels, monkeypatch, PV.evaluate, pi, pj, mats)
        # the same function: equal but for the host libm's last bit against NumPy's
        np.testing.assert_allclose(fused, want, rtol=4e-16 if ev.dtype == np.float64 else 0,
                                   atol=0, equal_nan=True,
                                   err_msg=f"{metric} {ev.dtype} mats={with_mats}")
        # the broadcast form the callers use (rows x candidates)
        grid = _through(ev, kernels, monkeypatch, PV.evaluate, pi[:5, None], pj[None, :7], None)
        np.testing.assert_array_equal(grid.shape, (5, 7))
        if with_mats:
            continue
        # the tie searches: the lower bound along an order, each step the compiled epilogue
        # (so that the check is of the search, not of libm against NumPy)
        h = lambda r, j: _through(ev, kernels, monkeypatch, PV.evaluate, r, j, None)  # noqa: E731
        rows = rng.integers(0, 40, 300).astype(np.int64)
        order = rng.permutation(50).astype(np.int64)  # any order: the same comparisons
        t = rng.uniform(0, 3, rows.size)
        t[::7] = h(rows[::7], order[rng.integers(0, 50, rows[::7].size)])  # exact ties
        strict = rng.random(rows.size) < 0.5
        want = np.empty(rows.size, dtype=np.int64)
        for q in range(rows.size):
            lo, hi = 0, order.size
            while lo < hi:
                mid = (lo + hi) // 2
                v = h(rows[q:q + 1], order[mid:mid + 1])[0]
                if (v > t[q]) if strict[q] else (v >= t[q]):
                    hi = mid
                else:
                    lo = mid + 1
            want[q] = lo
        with monkeypatch.context() as mp:
            mp.setattr(PV, "FUSED_SEARCH", True)
            got = _through(ev, kernels, monkeypatch, PV.search, rows, t, strict, order)
        np.testing.assert_array_equal(got, want, err_msg=f"search {metric} {ev.dtype}")
        searched.add(metric)
    assert set(MUST) <= searched


def _through(ev, kernels, monkeypatch, fn, *args):
    """``fn(ev, *args)`` (pruned_values.evaluate or search) with ``ev.cp`` a stand-in whose
    ElementwiseKernel runs the g++ build of the same source: the wrappers' argument order,
    broadcasting and scalars are those the GPU gets."""
    class Kernel:
        def __init__(self, ins, outs, op, name, preamble="", options=()):
            self.ins, self.outs, self.fn = ins.split(", "), outs.split()[0], kernels[(ins, op)]

        def __call__(self, *vals):
            assert len(vals) == len(self.ins), (self.ins, len(vals))
            ptr = lambda a: a.ctypes.data_as(ctypes.c_void_p)  # noqa: E731
            each = [(p.split(), v) for p, v in zip(self.ins, vals)]
            elem = [v for (p, v) in each if p[0] != "raw" and p[-1] not in SCALARS]
            shape = np.broadcast_shapes(*(np.shape(v) for v in elem))
            keep, call = [], [ctypes.c_longlong(int(np.prod(shape)))]
            for p, v in each:
                if p[0] == "raw":
                    assert v.dtype == np.dtype(p[1]), (p, v.dtype)  # CuPy: "Type is mismatched"
                    v = np.ascontiguousarray(v)
                elif p[-1] in SCALARS:
                    call.append(ctypes.c_longlong(int(v)))
                    continue
                else:
                    assert np.asarray(v).dtype == np.dtype(p[0] if p[0] != "bool" else "bool"), (p, v)
                    v = np.ascontiguousarray(np.broadcast_to(v, shape))
                keep.append(v)
                call.append(ptr(v))
            out = np.empty(shape, dtype=np.int64 if self.outs == "int64" else np.float64)
            self.fn(*call, ptr(out))
            return out

    fake = types.SimpleNamespace(ElementwiseKernel=Kernel, asarray=np.asarray, int64=np.int64,
                                 float64=np.float64, bool_=np.bool_)
    with monkeypatch.context() as mp:
        mp.setattr(PV, "_KERNELS", {})
        mp.setattr(ev, "cp", fake)
        mp.setattr(PV, "FUSED", True)
        return fn(ev, *args)
