"""The Python front end: build IR from Python, compile it, run it.

The same functions serve three purposes, decided by their arguments:

* on formula arguments (inside ``gb.op(name, lambda x, y: ...)``) they build
  scalar sympy formulas: ``gb.sqrt(x)``, ``gb.where(x + y == 0, 0, ...)``;
* on symbolic operands (``A, B = gb.matrices("A B")``) they build IR;
* on concrete matrices (SciPy/NumPy/CuPy) ``mxm``, ``mxv``, ``reduce`` and
  ``apply`` evaluate eagerly;
* on graph operands (an operand is a ``gb.Matrix`` / ``gb.Vector``) they run the graph
  operation of the same name (``gr.mxm``, ``gr.mxv``, ``gr.reduce_rows`` (of a Vector:
  ``gr.reduce_scalar``), ``gr.apply``)
  and return a ``gb.Matrix`` / ``gb.Vector``; the graph operation's keyword arguments
  (``mask=``, ``accum=``, ``out=``, ``replace=``, ``dtype=``, ``backend=``) pass through.
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sps

from ..compiler import ir
from ..algebra import ops as _ops
from ..algebra.semirings import UNSET, Semiring, semiring as _semiring
from ..errors import InputError, ParameterError, TypeCheckError
from ..algebra.ops import Monoid, Op, as_monoid, make_op
from ..algebra.evaluate import apply_unary
from ..compiler.plan import Plan, cached_plan
from ..runtime import is_cupy, run, to_csr, working_memory_bytes

__all__ = [
    "matrices", "vectors", "mxm", "mxv", "reduce", "apply", "sqrt", "log", "exp", "abs",
    "where", "maximum", "minimum", "ncols", "eq", "op", "semiring", "compile", "Program", "isnan",
]


def _operands(cls, names: str):
    out = tuple(cls(n) for n in names.replace(",", " ").split())
    return out[0] if len(out) == 1 else out


def matrices(names: str) -> tuple[ir.Matrix, ...] | ir.Matrix:
    """Symbolic matrix operands: ``A, B = gb.matrices("A B")``."""
    return _operands(ir.Matrix, names)


def vectors(names: str) -> tuple[ir.Vector, ...] | ir.Vector:
    """Symbolic vector operands for mxv: ``x = gb.vectors("x")``."""
    return _operands(ir.Vector, names)


def _concrete(x) -> bool:
    return isinstance(x, np.ndarray) or sps.issparse(x) or is_cupy(x)


def _graph_operand(x) -> bool:
    """A ``gb.Matrix`` / ``gb.Vector``: an object that brings the graph operations (this
    module is a lower stage than gbdist.graph and does not import it)."""
    return callable(getattr(type(x), "_graph_operation", None))


def _kind(x) -> str:
    if _graph_operand(x):
        return f"gb.{type(x).__name__}"
    return f"symbolic {type(x).__name__}" if isinstance(x, ir.Node) else type(x).__name__


# the keyword arguments of the graph operations that gb.mxm / mxv / reduce / apply pass on
_GRAPH_KW = {"mxm": {"mask", "accum", "out", "replace", "dtype"},
             "mxv": {"mask", "accum", "out", "replace", "dtype", "compensated"},
             "reduce_rows": {"mask", "accum", "out", "replace", "dtype"},
             "reduce_scalar": {"dtype"},
             "apply": {"left", "right", "mask", "accum", "out", "replace", "dtype"}}


def _run_graph(call: str, name: str, operands, args, backend, kw):
    """``gb.<call>`` given a ``gb.Matrix`` / ``gb.Vector``: the graph operation ``gr.<name>``
    (sparse results, structural semantics, docs/graph_api.md)."""
    if any(isinstance(x, ir.Node) for x in operands):
        raise InputError(f"gb.{call}: a gb.Matrix / gb.Vector cannot be combined with symbolic "
                         "operands (gb.matrices)",
                         got=", ".join(_kind(x) for x in operands),
                         hint=f"gr.{name}(...) runs on gb.Matrix / gb.Vector data; build an "
                              "expression from gb.matrices(...) alone")
    unknown = sorted(set(kw) - _GRAPH_KW[name])
    if unknown:
        raise ParameterError(f"gb.{call} on a gb.Matrix / gb.Vector runs gr.{name}, which has "
                             f"no argument {unknown[0]}=",
                             got=", ".join(f"{k}=" for k in unknown),
                             expected=", ".join(f"{k}="
                                                for k in sorted(_GRAPH_KW[name] | {"backend"})),
                             hint="the dense-result arguments (working_memory=, strategy=, ...) "
                                  "are for SciPy / NumPy operands")
    graph_op = next(type(x) for x in operands if _graph_operand(x))._graph_operation(name)
    return graph_op(*args, backend=backend, **kw)


def _shape(x) -> str:
    return " × ".join(str(d) for d in x.shape)


def _check_inner(call: str, left, right, names: tuple[str, str]):
    """An eager product's shapes as the user passed them: ``left``'s columns must be
    ``right``'s rows (a vector's length), named as the arguments, not as the plan's
    operands (the plan reads ``right`` transposed)."""
    shapes = getattr(left, "shape", None), getattr(right, "shape", None)
    vector = call == "mxv"
    if vector and shapes[1] is not None and len(shapes[1]) == 2 and 1 in shapes[1]:
        shapes = shapes[0], (max(shapes[1]),)  # a sparse vector: one row or one column
    if None in shapes or len(shapes[0]) != 2 or len(shapes[1]) != (1 if vector else 2) \
            or shapes[0][1] == shapes[1][0]:
        return  # not both concrete (the binding checks what there is), or they fit
    (ln, rn), k = names, shapes[0][1]
    if vector:
        expected, got = f"{ln} n × k and {rn} of length k", f"{rn} of length {shapes[1][0]}"
        fix = f"a {rn} of length {k}"
    else:
        expected, got = f"{ln} n × k and {rn} k × m", f"{rn} {_shape(right)}"
        fix = (f"gb.{call}({ln}, {rn}.T, sr): rows of {ln} against rows of {rn}, the "
               f"distance form mxm(A, B.T)" if shapes[1][1] == k else f"a {rn} with {k} rows")
    raise InputError(f"gb.{call}({ln}, {rn}, sr): {ln}'s columns must match {rn}'s "
                     f"{'length' if vector else 'rows'}", expected=expected,
                     got=f"{ln} {_shape(left)}, {got}", hint=f"pass {fix}")


def _as_monoid(m) -> Monoid:
    if isinstance(m, Monoid):
        return m
    if isinstance(m, Op):
        return as_monoid(m)
    raise TypeCheckError("expected a monoid (plus, times, min, max, lor, land, any)", got=repr(m))


def _as_semiring(sr) -> Semiring:
    if isinstance(sr, Semiring):
        return sr
    raise TypeCheckError("expected a semiring", got=repr(sr),
                         hint="gb.semiring(mul, add) or gb.semirings.plus_times")


def semiring(mul: Op, add, annihilator=UNSET, name: str = "") -> Semiring:
    """``gb.semiring(mul, add, annihilator=...)``; see :mod:`gbdist.algebra`."""
    return _semiring(mul, add, annihilator, name)


def op(name: str, formula, domain: str | None = None, doc: str = "") -> Op:
    """A user op from a formula: ``gb.op("chi2", lambda x, y: ...)``."""
    return make_op(name, formula, domain, doc)


# --- products -------------------------------------------------------------


def mxm(left, right, sr=None, *, backend: str = "auto", **run_kw):
    """``C[i, j] = ⊕_k left[i, k] ⊗ right[k, j]``; eager on concrete matrices (a dense
    result); ``gr.mxm`` (a sparse ``gb.Matrix``) when an operand is a ``gb.Matrix``."""
    if sr is None:
        raise TypeCheckError("gb.mxm needs a semiring as its third argument",
                             expected="gb.mxm(A, B.T, semiring)", got="two arguments",
                             hint="gb.semirings.plus_times (the matrix product), or "
                                  "gb.semiring(gb.ops.absdiff, gb.ops.plus)")
    sr = _as_semiring(sr)
    if _graph_operand(left) or _graph_operand(right):
        return _run_graph("mxm", "mxm", (left, right), (left, right, sr), backend, run_kw)
    if _concrete(left) or _concrete(right):
        _check_inner("mxm", left, right, ("left", "right"))
        A, B = ir.Matrix("A"), ir.Matrix("B")
        return compile(ir.MxM(A, B, sr))(A=left, B=right, backend=backend, **run_kw)
    return ir.MxM(left, right, sr)


def mxv(matrix, vector, sr, *, backend: str = "auto", **run_kw):
    """``y[i] = ⊕_k A[i, k] ⊗ x[k]``; eager on concrete inputs (a dense result);
    ``gr.mxv`` (a sparse ``gb.Vector``) when an operand is a ``gb.Matrix`` / ``gb.Vector``."""
    sr = _as_semiring(sr)
    if _graph_operand(matrix) or _graph_operand(vector):
        return _run_graph("mxv", "mxv", (matrix, vector), (matrix, vector, sr), backend, run_kw)
    if _concrete(matrix) or _concrete(vector):
        _check_inner("mxv", matrix, vector, ("matrix", "vector"))
        A, x = ir.Matrix("A"), ir.Vector("x")
        return compile(ir.MxV(A, x, sr))(A=matrix, x=vector, backend=backend, **run_kw)
    return ir.MxV(matrix, vector, sr)


def reduce(m, monoid, *, backend: str = "auto", **graph_kw):
    """Row-wise reduction over all columns (unstored entries hold the fill); on a
    ``gb.Matrix``, ``gr.reduce_rows`` (a sparse ``gb.Vector``: a graph's row reduces its
    stored entries; ``graph_kw``: its ``mask=``, ``accum=``, ``out=``, ...); on a
    ``gb.Vector``, ``gr.reduce_scalar`` (a NumPy scalar)."""
    monoid = _as_monoid(monoid)
    if _graph_operand(m):
        name = "reduce_rows" if m.ndim == 2 else "reduce_scalar"
        return _run_graph("reduce", name, (m,), (m, monoid), backend, graph_kw)
    if graph_kw:
        raise ParameterError("gb.reduce takes keyword arguments only for a gb.Matrix",
                             got=", ".join(f"{k}=" for k in graph_kw),
                             hint="gr.reduce_rows(gb.Matrix(X), monoid, mask=...) is the "
                                  "graph form")
    if _concrete(m):
        A = ir.Matrix("A")
        return compile(ir.RowReduce(A, monoid))(A=m, backend=backend)
    return ir.RowReduce(m, monoid)


def apply(op_: Op, m, *, backend: str = "auto", **graph_kw):
    """A unary op on every stored value (and on the fill); eager on a concrete matrix; on a
    ``gb.Matrix`` / ``gb.Vector``, ``gr.apply`` (``graph_kw``: ``left=`` / ``right=`` for a
    binary op, ``mask=``, ``accum=``, ``out=``, ...)."""
    if _graph_operand(m):
        return _run_graph("apply", "apply", (m,), (op_, m), backend, graph_kw)
    if graph_kw:
        raise ParameterError("gb.apply takes keyword arguments only for a gb.Matrix / gb.Vector",
                             got=", ".join(f"{k}=" for k in graph_kw),
                             hint="gr.apply(op, gb.Matrix(X), right=...) for the graph form")
    if not isinstance(op_, Op) or op_.arity != 1:
        raise TypeCheckError("apply needs a unary op", got=repr(op_))
    if _concrete(m):
        csr = to_csr(m, "A")
        fill = float(apply_unary(op_, np.zeros(1))[0])
        if fill != 0:
            raise InputError(f"apply({op_.name}, ·) maps the unstored zeros to {fill:g}",
                             hint="use it inside an expression, where the fill is tracked")
        return sps.csr_matrix((apply_unary(op_, csr.data), csr.indices, csr.indptr), shape=csr.shape)
    return ir.Apply(op_, m)


def ncols(m) -> ir.NCols:
    """The number of columns k of a matrix operand (a scalar)."""
    return ir.NCols(m)


# --- pointwise functions: scalars (op formulas) or IR (metric expressions) ---


def _any_ir(args) -> bool:
    return any(isinstance(a, ir.Node) for a in args)


def _plain_number(a) -> bool:
    return isinstance(a, (int, float, np.integer, np.floating)) and not isinstance(a, (bool, np.bool_))


def _dual(fn_name: str, scalar_name: str):
    """``gb.<fn_name>``: IR over the output grid, a folded number, or the scalar formula
    function ``gb.ops.<scalar_name>`` (sympy: looked up when first called on formulas)."""
    def fn(*args):
        if _any_ir(args):
            return ir.Pointwise(fn_name, tuple(ir.lift(a) for a in args))
        if fn_name != "where" and all(_plain_number(a) for a in args):  # as math.sqrt(2) does
            from .scope import fold
            return fold(fn_name, *(float(a) for a in args))
        return getattr(_ops, scalar_name)(*args)
    fn.__name__ = fn_name
    fn.__doc__ = f"{fn_name}(...) over formulas (in gb.op) or over the output grid (in metrics)."
    return fn


sqrt = _dual("sqrt", "s_sqrt")
log = _dual("log", "s_log")
exp = _dual("exp", "s_exp")
abs = _dual("abs", "s_abs")  # noqa: A001
maximum = _dual("maximum", "s_max")
minimum = _dual("minimum", "s_min")
_where = _dual("where", "s_where")


def isnan(a):
    """``isnan(a)`` in an op's formula: the condition that a value is NaN, a missing value
    (gbdist.algebra.missing): ``gb.op("known", lambda x: gb.where(gb.isnan(x), 0, x))``."""
    if _any_ir((a,)):
        raise TypeCheckError("isnan() tests the values inside an op's formula, not the output "
                             "grid", hint="write it in gb.op(...): gb.where(gb.isnan(x), 0, x)")
    return _ops.s_isnan(a)


def where(cond, a, b):
    """``where(cond, a, b)`` over formulas (in gb.op) or over the output grid (in metrics)."""
    if isinstance(cond, (bool, np.bool_)) and _any_ir((a, b)):
        raise TypeCheckError(
            f"the condition of gb.where(...) is the Python value {bool(cond)}, not a comparison "
            "over the output grid", got=f"where({bool(cond)}, ...)",
            expected="a gbdist value such as gb.eq(gb.mxm(A, B.T, ...), 0)",
            hint=EQ_HINT)
    return _where(cond, a, b)


from .hints import EQ_HINT  # noqa: E402  (how to compare gbdist expressions)


def eq(a, b):
    """``a == b`` as a value (1 or 0): IR nodes do not overload ``==``."""
    if _any_ir((a, b)):
        return ir.Pointwise("eq", (ir.lift(a), ir.lift(b)))
    from ..algebra.sym import Sym
    return Sym(a) == b


def power(a, b):
    if _any_ir((a, b)):
        return ir.Pointwise("pow", (ir.lift(a), ir.lift(b)))
    from ..algebra.sym import Sym
    return Sym(a) ** b


# --- programs -----------------------------------------------------------------


class Program:
    """A compiled expression: its plan, ready to run on data."""

    def __init__(self, plan: Plan):
        self.plan = plan

    @property
    def inputs(self) -> list[str]:
        return [s.name for s in ir.symbols(self.plan.expr)]

    def __call__(self, backend: str = "auto", working_memory: float | str | None = None,
                 dtype=None, drop_zeros: bool = False, strategy: str = "auto",
                 ensure_all_finite=True, **inputs):
        """Run on concrete inputs given by name (``program(A=X, B=Y)``).

        ``ensure_all_finite``: True (default) refuses NaN and ±inf in the inputs
        (:class:`gbdist.errors.NonFiniteError`, a ``ValueError``), ``"allow-nan"``
        refuses ±inf only, False computes with them: entries that involve a
        non-finite value get the formula's IEEE value (docs/inputs.md).
        ``working_memory``: MiB, or a size with a unit (``"512MiB"``, ``"2GB"``), as
        everywhere in gbdist.
        """
        return run(self.plan, inputs, backend=backend,
                   working_memory=working_memory_bytes(working_memory),
                   drop_zeros=drop_zeros, dtype=dtype, strategy=strategy,
                   ensure_all_finite=ensure_all_finite)

    def explain(self):
        from ..runtime.invariance import invariance
        from ..compiler.explain import Explanation
        return Explanation.from_plan(self.plan).with_conditioning(str(invariance(self.plan)))

    def __repr__(self):
        return f"Program({ir.to_text(self.plan.expr)})"


def compile(expr: ir.Node, roles: dict | None = None) -> Program:  # noqa: A001
    """Type-check, analyse and plan ``expr``; plans are cached by structural key."""
    if not isinstance(expr, ir.Node):
        raise TypeCheckError("compile() needs a gbdist expression", got=type(expr).__name__,
                             hint="build one with gb.mxm, gb.reduce, ... on gb.matrices(...)")
    return Program(cached_plan(expr, tuple(sorted((roles or {}).items()))))
