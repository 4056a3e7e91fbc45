"""gb_prune_union_top (kernels/pruned_plan.cuh, issue 29) on the host: the kernels and the
generated ``PUnion`` structs compiled as host C++ (g++, no contraction; the CUDA keywords
and thread indices as macros, the grid one block of 32 threads run one after another),
launched through pruned_plan's own wrappers (``union_keys``, ``union_top_pairs``,
``union_pairs`` with one lane a pair) with NumPy arrays in place of CuPy ones. At every
overlapping pair of random CSR rows (empty rows, rows sharing all / some / none of their
columns, tied keys, negative values, -0.0, ±inf and NaN, float32 and float64 storage,
int32 and int64 indptr) the new kernel's value equals a NumPy brute force over the union
of the pair's columns and gb_prune_union's (== with NaN equal to NaN, and the very bits
wherever the value is not zero: a zero maximum's sign is not fixed, as gb_prune_union's
own depends on its lane count). The ∩ part is given as the overlap SpGEMM computes it
(fmax / fmin from NaN: a NaN term ignored), so the rows whose terms can be NaN must take
the full loop. The kernels on a GPU: tests/neighbors/test_pruning_gpu.py."""
import ctypes
import re
import shutil
import subprocess
import sys
import types

import numpy as np
import pytest
import scipy.sparse as sps
import sympy as sp

import gbdist as gb
from gbdist.algebra.evaluate import apply_binary, apply_unary
from gbdist.algebra.formulas import X, Y
from gbdist.backends.cuda import pruned_plan as PP
from gbdist.compiler import ir
from gbdist.compiler.typecheck import row_operand
from gbdist.pairwise import metric_program
from gbdist.resources import read

from test_pruned_values import USER

GXX = shutil.which("g++")
pytestmark = pytest.mark.skipif(GXX is None, reason="no g++")

A_, B_ = gb.matrices("A B")
_negabs = gb.op("negabs_union_top_test", lambda x, y: -abs(x - y))
_maxw = gb.op("maxw_union_top_test", lambda x, y: abs(2 * x - y))
_maxabs = gb.op("maxabs_union_top_test", lambda x, y: gb.maximum(abs(x - y), abs(x)) / 2)
# max and min unions: a negation, a max inside ⊗ (gb_max in gb_prune_union, fmax in the
# SpGEMM), and 2x - y, which the kernel declines (the SpGEMM may fuse it into an fma)
TOP = {"min_negabs": gb.mxm(A_, B_.T, gb.semiring(_negabs, gb.ops.min)),
       "max_maxabs": gb.mxm(A_, B_.T, gb.semiring(_maxabs, gb.ops.max)),
       "max_2x": gb.mxm(A_, B_.T, gb.semiring(_maxw, gb.ops.max))}


def _unions():
    """(name.step, node, plan) of every two-pass union of chebyshev, test_pruned_values.USER
    and TOP."""
    plans = [("chebyshev", metric_program("chebyshev").plan)]
    plans += [(k, gb.compile(v).plan) for k, v in {**USER, **TOP}.items()]
    for name, plan in plans:
        for st in plan.steps:
            if isinstance(st.node, ir.TwoPassUnion):
                yield f"{name}.{st.name}", st.node, plan


def test_which_unions_take_the_new_kernel():
    got = {name: PP.top_union(node) for name, node, _ in _unions()}
    assert got == {"chebyshev.t0": True, "ordered_unions.t0": False,  # min-plus: corner counted
                   "ordered_unions.t1": True, "direct_union.t0": False,  # plus
                   "min_negabs.t0": True, "max_maxabs.t0": True, "max_2x.t0": False}, got
    cls = PP._nan_class
    x, y = X, Y
    assert cls(sp.Abs(x - y)) == PP._NOT_NAN and cls(x) == PP._FINITE
    assert cls(-sp.Abs(x) / 2) == PP._FINITE and cls(3 * x) == PP._NOT_NAN
    for bad in (x * y - y * x + x * x, sp.exp(x), x / y, sp.Abs(x - y) * x,
                sp.Abs(x - y) + sp.Abs(x + y), 0 * x + sp.oo, sp.sqrt(x), sp.log(x)):
        assert cls(sp.expand(bad) if bad.is_Add else bad) == PP._ANY, bad
    assert cls(sp.Max(sp.Abs(x - y), x) + 1) == PP._NOT_NAN
    assert cls(sp.Abs(2 * x - y)) == PP._ANY and cls(-sp.Abs(x - y) + 1) == PP._NOT_NAN


_HOST = """#include <cmath>
#define GB_INF ((double)INFINITY)
#define GB_NAN ((double)NAN)
#define __global__
#define __device__
#define __forceinline__ inline
#define __shfl_xor_sync(mask, v, off, width) (v)
struct gb_dim3 { unsigned x; };
static gb_dim3 threadIdx = {0}, blockIdx = {0}, blockDim = {32}, gridDim = {1};
"""

_SIGS = {  # the kernels' parameters (T: storage, I: indptr type)
    "union": "const I* Ap, const int* Aj, const T* Ax, const I* Bp, const int* Bj, const T* Bx, "
             "const long long* pi, const long long* pj, long long npairs, double* out, "
             "long long* shared",
    "keys": "const T* val, long long n, double* key, unsigned char* bad",
    "top": "const I* Ap, const int* Aj, const T* Ax, const int* Ac, const double* Ak, "
           "const unsigned char* Abad, const I* Bp, const int* Bj, const T* Bx, "
           "const int* Bc, const double* Bk, const unsigned char* Bbad, const long long* pi, "
           "const long long* pj, const double* inter, long long npairs, double* out",
}


def _max_min():
    cuh = read("kernels", "gbdist.cuh")
    defs = re.findall(r"template <typename T> __device__ __forceinline__ T gb_m(?:ax|in)\(.*?\n}\n",
                      cuh, flags=re.S)
    assert len(defs) == 2
    return "".join(d.replace("__device__ __forceinline__", "inline") for d in defs)


def _build(tmp_path, storage, structs: dict):
    """The host library of ``structs`` and the kernels for ``storage``: {kernel name as
    pruned_plan launches it: ctypes function}."""
    st = "float" if storage == np.float32 else "double"
    parts = [_HOST, _max_min(), f"typedef {st} gb_real;\ntypedef double gb_acc;\n"]
    parts += list(structs.values())
    parts.append(read("kernels", "pruned_plan.cuh"))
    wrappers, names = [], {}
    for spec in structs:
        for itype in ("int", "long long"):
            for kind, name in (("union", f"gb_prune_union<{spec}, {itype}, 1>"),
                               ("keys", f"gb_prune_union_keys<{spec}, 0>"),
                               ("keys", f"gb_prune_union_keys<{spec}, 1>"),
                               ("top", f"gb_prune_union_top<{spec}, {itype}>")):
                if name in names:
                    continue
                sig = _SIGS[kind].replace("const T*", f"const {st}*").replace("const I*", f"const {itype}*")
                args = ", ".join(re.findall(r"(\w+)(?:,|$)", sig))
                fname = f"w{len(names)}"
                wrappers.append(f'extern "C" void {fname}({sig}) {{\n'
                                f"  for (unsigned t = 0; t < 32; ++t) {{ threadIdx.x = t; {name}({args}); }}\n}}\n")
                names[name] = fname
    src = tmp_path / f"top_{st}.cpp"
    src.write_text("\n".join(parts + wrappers))
    lib = tmp_path / f"top_{st}.so"
    r = subprocess.run([GXX, "-O1", "-ffp-contract=off", "-shared", "-fPIC", "-o", str(lib), str(src)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-3000:]
    so = ctypes.CDLL(str(lib))
    return {name: getattr(so, fname) for name, fname in names.items()}


def _launcher(fns):
    """pruned_plan._fn's stand-in: the host build of the named kernel, called with the
    wrapper's (grid, block, args) and NumPy arrays."""
    def fn(pk, name, d):
        host = fns[name]

        def launch(grid, block, args):
            call = []
            for a in args:
                if isinstance(a, np.ndarray):
                    assert a.flags.c_contiguous
                    call.append(a.ctypes.data_as(ctypes.c_void_p))
                else:
                    assert isinstance(a, np.int64), type(a)
                    call.append(ctypes.c_longlong(int(a)))
            host(*call)
        return launch
    return fn


def _rows(rng, m, n, ncols, storage, special: bool):
    """Two CSR operands whose rows share all / some / none of their columns: empty rows,
    a row of A repeated in B (same columns, same or other values), tied values, negative
    values and -0.0; with ``special`` also NaN and ±inf in a few rows."""
    pool = np.array([0.5, -0.5, 1.0, -1.0, 2.0, -0.0, 0.25, 3.0, -2.0])

    def mat(rows):
        D = np.zeros((rows, ncols))
        for r in range(rows):
            k = int(rng.integers(0, ncols + 1)) if r % 5 else int(rng.integers(0, 3))
            cols = rng.choice(ncols, size=k, replace=False)
            D[r, cols] = rng.choice(pool, size=k)
        return D
    a, b = mat(m), mat(n)
    a[0], b[0] = 0.0, 0.0  # empty rows
    b[1] = a[1]
    b[2][a[2] != 0] = rng.choice(pool, size=int((a[2] != 0).sum()))  # the same columns
    b[3] = 0.0
    b[3][a[3] == 0] = 1.5  # none of row 3's columns
    mask_a, mask_b = (a != 0) | (rng.random(a.shape) < 0.05), (b != 0) | (rng.random(b.shape) < 0.05)
    if special:
        for M in (a, b):
            for v in (np.nan, np.inf, -np.inf, np.nan):
                M[int(rng.integers(4, M.shape[0])), int(rng.integers(0, ncols))] = v
    out = []
    for D, mask in ((a, mask_a), (b, mask_b)):  # stored entries: nonzeros, some stored zeros
        r, c = np.nonzero(mask | np.isnan(D))
        C = sps.csr_matrix((D[r, c].astype(storage), (r, c)), shape=D.shape)
        C.sort_indices()
        out.append(C)
    # -0.0 survives as stored: scipy keeps explicit zeros given as data
    return out


def _chain_values(chain, v):
    v = np.asarray(v, dtype=np.float64)
    for op in chain:
        v = apply_unary(op, v)
    return np.asarray(v, dtype=np.float64)


def _brute(node, A, B, pi, pj):
    """The union at each pair without the corner (gb_max / gb_min fold: NaN wins), and the
    overlap SpGEMM's value there (fmax / fmin from NaN over the shared columns' terms)."""
    lchain, rchain = row_operand(node.left)[2], row_operand(node.right)[2]
    za = float(_chain_values(lchain, [0.0])[0])
    zb = float(_chain_values(rchain, [0.0])[0])
    f = node.add.ufunc
    fm = np.fmax if f is np.maximum else np.fmin
    union, inter = np.empty(pi.size), np.empty(pi.size)
    with np.errstate(all="ignore"):
        for t, (i, j) in enumerate(zip(pi, pj)):
            a = dict(zip(A.indices[A.indptr[i]:A.indptr[i + 1]],
                         _chain_values(lchain, A.data[A.indptr[i]:A.indptr[i + 1]])))
            b = dict(zip(B.indices[B.indptr[j]:B.indptr[j + 1]],
                         _chain_values(rchain, B.data[B.indptr[j]:B.indptr[j + 1]])))
            acc, cap = node.add.identity_value, np.nan
            for c in sorted(set(a) | set(b)):
                v = apply_binary(node.mul, np.array([a.get(c, za)]), np.array([b.get(c, zb)]))[0]
                acc = f(acc, v)
                if c in a and c in b:
                    cap = fm(cap, v)
            union[t], inter[t] = acc, cap
    return union, inter


def _same(got, want, what):
    np.testing.assert_array_equal(got, want, err_msg=what)  # ==, NaN equal to NaN
    nz = (want != 0) & ~np.isnan(want)
    np.testing.assert_array_equal(got[nz].view(np.int64), want[nz].view(np.int64), err_msg=what)


@pytest.mark.parametrize("storage", [np.float32, np.float64], ids=["float32", "float64"])
def test_union_top_equals_brute_force_and_the_old_kernel(storage, tmp_path, monkeypatch):
    rng = np.random.default_rng(29 if storage == np.float32 else 30)
    monkeypatch.setattr(PP, "UNION_LANES", 1)  # gb_prune_union's one-lane form (no shuffles)
    fake = types.ModuleType("cupy")  # the launchers' `import cupy`: NumPy, in this test only
    fake.__dict__.update({k: getattr(np, k) for k in dir(np) if not k.startswith("__")})
    monkeypatch.setitem(sys.modules, "cupy", fake)
    checked, dropped, bad_rows = set(), 0, 0
    for name, node, plan in _unions():
        pk = PP.kernels(plan, storage)
        step = name.split(".")[1]  # pk may be cached from an equal plan (other node objects)
        if step not in pk.tops:
            continue
        spec = pk.unions[step][0]
        src = re.search(rf"struct {spec} \{{.*?\n\}};\n", pk.source, flags=re.S).group(0)
        (tmp_path / name).mkdir()
        monkeypatch.setattr(PP, "_fn", _launcher(_build(tmp_path / name, storage, {spec: src})))
        for trial in range(6):
            special = trial % 2 == 1
            A, B = _rows(rng, 30, 40, 10, storage, special)
            if trial >= 4:  # int64 indptr
                for M in (A, B):
                    M.indptr = M.indptr.astype(np.int64)
            ones = [sps.csr_matrix((np.ones(M.nnz), M.indices, M.indptr), shape=M.shape)
                    for M in (A, B)]
            pat = (ones[0] @ ones[1].T).tocsr()  # the overlapping pairs, as the SpGEMM's pattern
            pat.sort_indices()
            pi = np.repeat(np.arange(A.shape[0]), np.diff(pat.indptr)).astype(np.int64)
            pj = pat.indices.astype(np.int64)
            want, inter = _brute(node, A, B, pi, pj)
            got = PP.union_top(np, pk, step, A, B, pi, pj, inter)
            old, _ = PP.union_pairs(pk, step, A, B, pi, pj)
            what = f"{name} {np.dtype(storage).name} trial {trial}"
            _same(got, want, what)
            _same(got, old, what + " (gb_prune_union)")
            dropped += int((np.isnan(want) & ~np.isnan(inter)).sum())
            bad_rows += int(PP.top_order(np, pk, step, 0, A).bad.sum())
            assert special or not np.isnan(want).any(), what
        checked.add(name.split(".")[0])
    assert checked == {"chebyshev", "ordered_unions", "min_negabs", "max_maxabs"}, checked
    assert dropped > 0 and bad_rows > 0  # the NaN rows were exercised
