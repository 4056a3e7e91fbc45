"""The CUDA graph kernels' functor printer (issue 12): ``GbF`` printed from the ops' sympy
formulas (:func:`functor`; the types and kinds: :mod:`.graph_codegen`'s docstring). Imported
only where a functor is printed: a process that finds the functor's stored record
(:func:`.graph_functor.stored_functor`) imports no sympy."""
from __future__ import annotations

import numpy as np
import sympy as sp

from ...errors import BackendError, InputError
from .codegen import CudaPrinter, fold_constants, scalar
from .graph_codegen import CTYPES, _int_literal, monoid_kind, nan_identity, work_dtype


def identity_literal(monoid, work: np.dtype, boolean: bool) -> str:
    """⊕'s identity in the accumulator type, as the reference defines it in the domain
    (:func:`gbdist.backends.graph_reference.identity_value`: ±inf is an integer type's
    max/min; on bool, min's identity is true and max's false)."""
    from ..graph_reference import identity_value
    ct = CTYPES[work]
    if boolean:
        return "1" if bool(identity_value(monoid, np.bool_)) else "0"
    if work.kind == "i":
        v = float(monoid.identity_value)
        if not np.isinf(v) and (np.isnan(v) or v != int(v)):
            raise InputError("the monoid's identity is not an integer", got=str(monoid.identity),
                             hint="use a floating-point result type")
        return _int_literal(int(identity_value(monoid, work)), ct)
    if nan_identity(monoid, work):
        return f"(({ct})GB_NAN)"
    return f"(({ct}){CudaPrinter(work).literal(float(monoid.identity_value))})"


class GraphCudaPrinter(CudaPrinter):
    """:class:`CudaPrinter` with ``Max``/``Min`` as C's fmax/fmin (``gb_fmax<T>`` /
    ``gb_fmin<T>``, ``kernels/graph_types.cuh``): a NaN argument is ignored, as in
    SuiteSparse and the reference. Graph formulas only: the distance kernels keep
    ``gb_max``/``gb_min`` (NaN propagates; their inputs are validated NaN-free)."""

    def _print_Max(self, expr):
        out = self._print(expr.args[0])
        for a in expr.args[1:]:
            out = f"gb_fmax<{self.T}>({out}, {self._print(a)})"
        return out

    def _print_Min(self, expr):
        out = self._print(expr.args[0])
        for a in expr.args[1:]:
            out = f"gb_fmin<{self.T}>({out}, {self._print(a)})"
        return out


class _NamedPrinter(GraphCudaPrinter):
    """:class:`GraphCudaPrinter` (double) with extra symbol names (the integer parts of a float
    formula in an integer domain)."""

    def __init__(self, names: dict):
        super().__init__(np.float64)
        self.names = names

    def _print_Symbol(self, expr):
        if expr.name in self.names:
            return self.names[expr.name]
        return super()._print_Symbol(expr)


class IntCudaPrinter:
    """A formula over x, y as a C expression in the integer domain ``W`` (``int`` or
    ``long long``), as the reference evaluates it (:mod:`gbdist.backends.graph_reference`):
    integer-valued nodes with the wrapping helpers of ``kernels/graph_types.cuh``, the
    other nodes in double over ``(double)`` conversions of their integer-valued parts
    (printed by :class:`GraphCudaPrinter`); the caller casts a double result with ``gb_to_int``."""

    _REL = {sp.Eq: "==", sp.Ne: "!=", sp.StrictLessThan: "<", sp.LessThan: "<=",
            sp.StrictGreaterThan: ">", sp.GreaterThan: ">="}

    def __init__(self, ct: str):
        self.ct = ct

    def value(self, e) -> str:
        from ..graph_reference import _TRUTH, _wrap_int, float_parts, integer_valued
        if isinstance(e, _TRUTH):
            return f"((W)({self.cond(e)}))"
        if e.is_Symbol:
            return e.name
        if e.is_Number or e.is_NumberSymbol or e in (sp.oo, -sp.oo, sp.zoo, sp.nan):
            if e.is_Integer:
                dt = np.dtype(np.int32 if self.ct == "int" else np.int64)
                return _int_literal(int(_wrap_int(int(e), dt)), self.ct)
            from ...algebra.evaluate import constant_value
            return CudaPrinter(np.float64).literal(constant_value(e))
        if integer_valued(e):
            return self._int(e)
        f, parts = float_parts(e)
        names = {s.name: (self.cond(sub) if isinstance(sub, _TRUTH)
                          else f"((double)({self.value(sub)}))") for s, sub in parts}
        return _NamedPrinter(names).doprint(fold_constants(f))

    def _fold(self, fn: str, args) -> str:
        out = self.value(args[0])
        for a in args[1:]:
            out = f"{fn}<W>({out}, {self.value(a)})"
        return out

    def _int(self, e) -> str:
        a = e.args
        if isinstance(e, sp.Add):
            return self._fold("gb_wadd", a)
        if isinstance(e, sp.Mul):
            return self._fold("gb_wmul", a)
        if isinstance(e, sp.Pow):
            return f"gb_wpow<W>({self.value(e.base)}, {int(e.exp)})"
        if isinstance(e, sp.Abs):
            return f"gb_wabs<W>({self.value(a[0])})"
        if isinstance(e, sp.sign):
            return f"gb_isign<W>({self.value(a[0])})"
        if isinstance(e, sp.Max):
            return self._fold("gb_imax", a)
        if isinstance(e, sp.Min):
            return self._fold("gb_imin", a)
        if isinstance(e, sp.Piecewise):
            out = self.value(a[-1].expr)
            for p in reversed(a[:-1]):
                out = f"(({self.cond(p.cond)}) ? {self.value(p.expr)} : {out})"
            return out
        if isinstance(e, sp.ITE):
            return f"(({self.cond(a[0])}) ? {self.value(a[1])} : {self.value(a[2])})"
        raise AssertionError(f"not integer-valued: {e}")  # pragma: no cover

    def cond(self, c) -> str:
        if c is sp.true:
            return "true"
        if c is sp.false:
            return "false"
        for cls, op in self._REL.items():
            if isinstance(c, cls):
                return f"({self.value(c.lhs)} {op} {self.value(c.rhs)})"
        if isinstance(c, sp.And):
            return "(" + " && ".join(self.cond(t) for t in c.args) + ")"
        if isinstance(c, sp.Or):
            return "(" + " || ".join(self.cond(t) for t in c.args) + ")"
        if isinstance(c, sp.Not):
            return f"(!{self.cond(c.args[0])})"
        if isinstance(c, sp.Xor):
            out = f"((bool){self.cond(c.args[0])})"
            for t in c.args[1:]:
                out = f"({out} != (bool){self.cond(t)})"
            return out
        return f"({self.value(c)} != 0)"


def _int_formula(expr, ct: str) -> str:
    try:
        return f"gb_to_int<W>({IntCudaPrinter(ct).value(sp.sympify(expr))})"
    except BackendError:
        raise
    except Exception as exc:  # sympy's printer errors, a formula nested too deeply
        from ...algebra.mathtext import math
        raise BackendError("the CUDA code generator cannot print this formula",
                           got=f"{math(expr, 200)} ({type(exc).__name__})",
                           hint="use backend='cpu', or write the op with +, -, *, /, ^, abs, sqrt, "
                                "log, exp, min, max, where") from None


# ⊕ of the monoid kinds (monoid_kind) in integer and float accumulators: ints wrap (on
# unsigned types), floats' min/max are fmin/fmax; kind 0 prints the monoid's formula.
_ADD = {"int": {1: "gb_wadd<W>(a, b)", 2: "gb_imin<W>(a, b)", 3: "gb_imax<W>(a, b)", 4: "b"},
        "float": {1: "a + b", 2: "gb_fmin<W>(a, b)", 3: "gb_fmax<W>(a, b)", 4: "b"}}


def functor(mul, monoid, out_dtype, acc64: bool = False) -> str:
    """The ``GbF`` struct: ⊗ = ``mul`` (an op, or None for reductions), ⊕ = ``monoid``,
    both evaluated in the domain ``out_dtype`` (module docstring)."""
    out = np.dtype(out_dtype)
    work = work_dtype(out, acc64)
    boolean = out == np.bool_
    integer = out.kind == "i"
    W = CTYPES[work]
    kind = monoid_kind(monoid, out)
    if integer:
        M = W
        load = "return gb_to_int<M>(v);"
        cast = "v"
        mul_body = (f"return {_int_formula(mul.formula, W)};" if mul is not None
                    else "return cast(x);")
        add = _ADD["int"].get(kind) or _int_formula(monoid.op.formula, W)
    else:
        mtype = np.dtype(np.float32) if work == np.float32 else np.dtype(np.float64)
        printer = GraphCudaPrinter(mtype)
        M = CTYPES[mtype]
        # operands are cast to the domain first (bool: nonzero), then to M
        load = "return (M)(v != (T)0);" if boolean else f"return (M)({W})v;"
        cast = "(W)((v) != (M)0)" if boolean else "(W)(v)"
        add = (_ADD["float"].get(kind)
               or f"cast({scalar(monoid.op.formula, printer, {'x': 'x', 'y': 'y'})})")
        mul_body = (f"return cast({scalar(mul.formula, printer)});" if mul is not None
                    else "return cast(x);")
    return "\n".join([
        "struct GbF {",
        f"  typedef {W} W;",
        f"  typedef {M} M;",
        f"  template <typename T> __device__ static __forceinline__ M load(T v) {{ {load} }}",
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


