"""CUDA source for the graph kernels (issue 12): a functor struct from the ops' formulas,
the kernel templates of ``kernels/graph_kernels.cuh``, and the instantiation names.

The functor ``GbF`` holds ⊗ (``mul``, over x = the left value and y = the right value),
⊕ (``add``) and ⊕'s identity, printed from the ops' sympy formulas by
:class:`~gbdist.backends.cuda.codegen.CudaPrinter` (user monoids included). Types:

* ``W``, the accumulator type: the output dtype, except bool (``int`` holding 0/1, so that
  atomics exist) and float32 with ``acc64`` (double);
* ``M``, the type formulas are evaluated in: ``float`` for float32 work, else ``double``;
  operand values are first cast to the result's compute type ``C`` (as
  :mod:`gbdist.backends.graph_reference` does: the result type, float64 for bool), and every
  ⊗/⊕ result is cast back to ``W`` (a boolean result is ``value != 0``). Integer formulas
  are thus evaluated in double: exact below 2^53.

``KIND`` selects the atomic ⊕: 1 plus (atomicAdd), 2 min and 3 max (atomicMin/atomicMax on
integers, a compare-and-swap loop on floats), 4 any (a plain store), 0 any other monoid
(compare-and-swap loop with ``add``).
"""
from __future__ import annotations

import hashlib

import numpy as np
import sympy as sp

from ...algebra.formulas import X, Y
from ...errors import InputError
from ...resources import read
from .codegen import CudaPrinter, scalar

CTYPES = {np.dtype(np.bool_): "bool", np.dtype(np.int32): "int", np.dtype(np.int64): "long long",
          np.dtype(np.float32): "float", np.dtype(np.float64): "double"}
INDEX_CTYPES = {np.dtype(np.int32): "int", np.dtype(np.int64): "long long"}

# Shared-memory SpGEMM bins: (table slots S, warps per row, rows per block); a bin takes the
# rows of at most S / 2 columns. The tables are dynamic shared memory (S = 16384 with 8-byte
# values: 192 KiB, one block an SM); S / (32 * warps) <= 16 keeps the numeric pass's sort in
# registers (64 a thread).
SHARED_BINS = ((32, 1, 8), (64, 1, 8), (128, 1, 4), (256, 2, 1), (512, 4, 1), (1024, 8, 1),
               (2048, 16, 1), (4096, 16, 1), (8192, 16, 1), (16384, 32, 1))
# SpMV bins: rows of degree <= bound get G lanes each; longer rows a 256-thread block. The
# one-launch kernel gb_spmv_binned switches on these four G values (kernels/graph_kernels.cuh).
SPMV_BINS = ((4, 1), (16, 4), (64, 16), (1024, 32))


def ctype(dtype, what: str = "values") -> str:
    dt = np.dtype(dtype)
    if dt not in CTYPES:
        raise InputError(f"the CUDA graph kernels do not support these {what}",
                         expected="bool, int32, int64, float32 or float64", got=str(dt),
                         hint="convert the data with .astype(...) first")
    return CTYPES[dt]


def index_ctype(dtype) -> str:
    dt = np.dtype(dtype)
    if dt not in INDEX_CTYPES:
        raise InputError("the CUDA graph kernels need int32 or int64 indices", got=str(dt))
    return INDEX_CTYPES[dt]


def work_dtype(out_dtype, acc64: bool = False) -> np.dtype:
    """The accumulator dtype for results of ``out_dtype``."""
    dt = np.dtype(out_dtype)
    ctype(dt, "result types")
    if dt == np.bool_:
        return np.dtype(np.int32)
    if dt == np.float32 and acc64:
        return np.dtype(np.float64)
    return dt


def monoid_kind(monoid) -> int:
    """1 plus, 2 min, 3 max, 4 any, 0 anything else (see the module docstring)."""
    if monoid.op.name == "any":
        return 4
    if monoid.invertible:
        return 1
    f = monoid.op.formula
    if f == sp.Min(X, Y):
        return 2
    if f == sp.Max(X, Y):
        return 3
    return 0


def _int_limit(ct: str, positive: bool) -> str:
    if ct == "int":
        return "2147483647" if positive else "(-2147483647 - 1)"
    return "9223372036854775807LL" if positive else "(-9223372036854775807LL - 1LL)"


def identity_literal(monoid, work: np.dtype, boolean: bool) -> str:
    v = float(monoid.identity_value)
    ct = CTYPES[work]
    if boolean:
        return "1" if (v != 0 and not np.isnan(v)) else "0"
    if work.kind == "i":
        if np.isinf(v):
            return _int_limit(ct, v > 0)
        if np.isnan(v) or v != int(v):
            raise InputError("the monoid's identity is not an integer", got=str(monoid.identity),
                             hint="use a floating-point result type")
        return f"(({ct}){int(v)}LL)"
    return f"(({ct}){CudaPrinter(work).literal(v)})"


def functor(mul, monoid, out_dtype, acc64: bool = False) -> str:
    """The ``GbF`` struct: ⊗ = ``mul`` (an op, or None for reductions), ⊕ = ``monoid``."""
    out = np.dtype(out_dtype)
    work = work_dtype(out, acc64)
    boolean = out == np.bool_
    mtype = np.dtype(np.float32) if work == np.float32 else np.dtype(np.float64)
    printer = CudaPrinter(mtype)
    W, M = CTYPES[work], CTYPES[mtype]
    C = M if boolean else W  # operands are cast to the compute type first (as the reference)
    kind = monoid_kind(monoid)
    cast = "(W)((v) != (M)0)" if boolean else "(W)(v)"
    if kind == 1:
        add = "cast((M)(a + b))" if boolean else "a + b"
    elif kind == 2:
        add = "gb_min<W>(a, b)"
    elif kind == 3:
        add = "gb_max<W>(a, b)"
    elif kind == 4:
        add = "b"
    else:
        add = f"cast({scalar(monoid.op.formula, printer, {'x': 'x', 'y': 'y'})})"
    mul_body = (f"return cast({scalar(mul.formula, printer)});" if mul is not None
                else "return cast(x);")
    return "\n".join([
        "struct GbF {",
        f"  typedef {W} W;",
        f"  typedef {M} M;",
        f"  typedef {C} C;",
        "  template <typename T> __device__ static __forceinline__ M load(T v) { return (M)(C)v; }",
        f"  static constexpr int KIND = {kind};",
        f"  __device__ static __forceinline__ W cast(M v) {{ return {cast}; }}",
        "  __device__ static __forceinline__ W mul(M x, M y) {",
        "    (void)x; (void)y;",
        f"    {mul_body}",
        "  }",
        "  __device__ static __forceinline__ W add(W a, W b) {",
        "    const M x = (M)a; const M y = (M)b; (void)x; (void)y;",
        f"    return {add};",
        "  }",
        f"  __device__ static __forceinline__ W identity() {{ return {identity_literal(monoid, work, boolean)}; }}",
        "};",
        ""])


def source(functor_src: str) -> str:
    """One translation unit: the prelude, the functor, the graph kernel templates."""
    return "\n".join([read("kernels", "gbdist.cuh"), functor_src, read("kernels", "graph_kernels.cuh")])


def key(src: str) -> str:
    return "graph-" + hashlib.sha256(src.encode()).hexdigest()[:24]


def spgemm_names(I: str, TA: str, TB: str, mask: int) -> tuple[str, ...]:
    """Every SpGEMM kernel for one (index, A value, B value, mask mode) combination."""
    out = []
    for numeric in ("false", "true"):
        for S, wpr, rpb in SHARED_BINS:
            out.append(shared_name(I, TA, TB, S, wpr, rpb, numeric == "true", mask))
        out.append(global_name(I, TA, TB, numeric == "true", mask))
    return tuple(out)


def shared_name(I, TA, TB, S, wpr, rpb, numeric: bool, mask: int) -> str:
    return (f"gb_spgemm_shared<GbF, {I}, {TA}, {TB}, {S}, {wpr}, {rpb}, "
            f"{'true' if numeric else 'false'}, {mask}>")


def global_name(I, TA, TB, numeric: bool, mask: int) -> str:
    return f"gb_spgemm_global<GbF, {I}, {TA}, {TB}, {'true' if numeric else 'false'}, {mask}>"


def spmv_name(I: str, TA: str, TX: str, comp: bool, csum: bool = False) -> str:
    """The one-launch SpMV; ``comp``: complemented mask; ``csum``: compensated sums."""
    return (f"gb_spmv_binned<GbF, {I}, {TA}, {TX}, {'true' if comp else 'false'}, "
            f"{'true' if csum else 'false'}>")



def spmv_symmetric_name(I: str, TA: str, TX: str, comp: bool) -> str:
    return f"gb_spmv_symmetric<GbF, {I}, {TA}, {TX}, {'true' if comp else 'false'}>"


def spmspv_name(I: str, TA: str, TU: str, TI: str, comp: bool) -> str:
    return f"gb_spmspv<GbF, {I}, {TA}, {TU}, {TI}, {'true' if comp else 'false'}>"


def segment_name(P: str, TV: str) -> str:
    return f"gb_segment_reduce<GbF, {P}, {TV}>"


def standalone(functor_src: str, names) -> str:
    """A source nvcc compiles on its own: every kernel of ``names`` explicitly instantiated
    (for the compile tests; at run time RawModule's name_expressions do this)."""
    refs = ",\n  ".join(f"(void*)&{n}" for n in names)
    return f"{source(functor_src)}\n[[maybe_unused]] void* const gb_instances[] = {{\n  {refs}}};\n"
