"""Differential test of the graph operations against python-graphblas (SuiteSparse:GraphBLAS).

A seeded generator makes random cases of every operation (mxm, mxv, vxm, ewise_add,
ewise_mult, apply with a unary op or a bound scalar, select, reduce_rows / reduce_cols /
reduce_scalar, extract, assign) over random operands (bool, int32, int64, float32,
float64, and mixed; stored zeros, empty rows and columns, and in a share of the cases
extreme values: the integer types' limits, ±inf, NaN, floats beyond int64), with the
optional mask (structural / by value, complemented), accumulator, replace, transposed
operands, ``out=`` and ``dtype=``. Each case is written out as two snippets of Python
source, one for gbdist and one for python-graphblas, which are executed as they are: a
failing case's message is a reproducer that runs by itself (``exec`` either snippet).
The stored pattern, the values (exact for bool and integers, a tolerance scaled to the
operands for floats) and the dtype of the two results are compared.

Translation rules (the documented differences, docs/graph_api.md, "Differences from
SuiteSparse:GraphBLAS"; each rule is marked ``# RULE`` where it is applied):

1. Type of the operation. gbdist picks the type an op is evaluated in by its own rule
   (``dtype=`` when given; else bool when ⊕ is ``lor`` / ``land``, monoids on bool only;
   else NumPy's ``result_type`` of the operands and a bound scalar, float64 when an op
   does not keep the type, e.g. ``div``); python-graphblas
   unifies the operands' types and reads a bound Python int as INT64. The GraphBLAS op is
   therefore always given typed in gbdist's type: ``semiring.min_plus[dtypes.INT32]``.
   ``out=`` does not change that type: GraphBLAS computes in the op's domain and casts
   on write into C, and so must gbdist.
2. ``div`` is true division in gbdist (float64 for integer operands by rule 1); typed in
   an integer or bool type (``dtype=``) it is GraphBLAS's ``GrB_DIV`` of that type,
   python-graphblas's ``binary.cdiv`` (C division, saturating x / 0).
3. ``plus`` on bool is *or* in both libraries (``GrB_PLUS_BOOL`` is ``GrB_LOR``), but
   python-graphblas has no ``plus`` monoid over BOOL (and computes ``plus_pair`` of bools
   in INT64): a bool ``plus`` monoid is written ``monoid.lor[BOOL]``, and semirings that
   python-graphblas does not list for a type are built with
   ``Semiring.register_anonymous(monoid, binary)``.
4. The accumulator is given untyped: python-graphblas types it by C (T is cast to C's
   type, the accumulator evaluated in it), as gbdist evaluates it in ``out``'s dtype.
5. ``reduce_scalar`` of nothing is the monoid's identity (``allow_empty=False``, as
   ``GrB_Matrix_reduce_<type>`` into a C scalar).
6. ``replace=True`` without a mask means nothing in gbdist; python-graphblas refuses it,
   so it is passed to python-graphblas only with a mask. A bare ``gb.Matrix`` as a mask is
   a value mask (``M.V``).
7. ``select`` by value compares with a thunk of the operand's own type, given to
   python-graphblas as a typed ``Scalar`` (python-graphblas 2025.2 reads a Python float
   thunk on an FP32 matrix wrongly: ``A.select("<=", -1.75)`` keeps -1.25); gbdist's
   ``"nonzero"`` is ``select("!=", 0)``.
8. ``any`` is used only as ``any_pair`` (every candidate value is 1), where the result is
   determined (gbdist's ``any`` takes the first stored value, SuiteSparse's any one).
9. ``div`` in a bool domain is not generated: gbdist evaluates it on 0/1 and casts
   (``0 / 0`` is NaN, true), GraphBLAS's ``DIV_BOOL`` is ``FIRST`` (false) — a documented
   difference, checked in :func:`test_documented_differences`.
10. The result type of ``ewise_add`` / ``ewise_mult`` is python-graphblas's for the untyped
   op (``gbdist.graph.types.ewise_result``): ``pair`` INT64, ``eq`` / ``ne`` BOOL,
   ``power`` the operands' unified type (``pair`` and ``power`` of ``dtype=`` when given:
   python-graphblas's typed op); the op is still typed in
   gbdist's domain (rule 1), but an untyped ``pair`` is written untyped (python-graphblas
   types it INT64: entries one side alone stores are cast to INT64 on the way), and C is
   made of the result type, so T is cast into it.

The default run is a few hundred cases per kernel set (seconds); ``GBDIST_SLOW_TESTS=1``
runs thousands and prints the outcomes per operation and type. Failures are shrunk
(entries and options dropped while the case still disagrees) before they are reported.
"""
from __future__ import annotations

import collections
import dataclasses
import os
import time

import numpy as np
import pytest

graphblas = pytest.importorskip("graphblas")

from graphblas import Matrix as GMatrix, Vector as GVector, Scalar as GScalar  # noqa: E402
from graphblas import binary as gbinary, monoid as gmonoid, semiring as gsemiring  # noqa: E402
from graphblas import dtypes as gdtypes, unary as gunary  # noqa: E402
from graphblas.core.operator import Semiring as GSemiring  # noqa: E402

import gbdist as gb  # noqa: E402
from gbdist import graph as gr  # noqa: E402

SLOW = os.environ.get("GBDIST_SLOW_TESTS") == "1"
CASES_PER_OP = 250 if SLOW else 24
SHRINK_PER_CLASS = 1  # failures shrunk (and shown in full) per class
EXTREME = 0.3  # share of cases with extreme values (type limits, inf, huge floats)

DTYPES = ("bool", "int32", "int64", "float32", "float64")
GB_TYPE = {"bool": "BOOL", "int32": "INT32", "int64": "INT64", "float32": "FP32", "float64": "FP64"}

# ops that keep the operands' type under gbdist's rule (docs/graph_api.md, "Types")
KEEPS = {"plus", "times", "min", "max", "minus", "first", "second", "pair", "lor", "land", "any",
         "abs", "neg", "identity"}
BINARY_OPS = ("plus", "minus", "times", "div", "first", "second", "pair", "max", "min", "lor",
              "land")
MONOIDS = ("plus", "times", "min", "max", "lor", "land")
BOOL_MONOIDS = ("lor", "land")  # their identity holds on bool only: the domain is bool
SEMIRINGS = (("plus", "times"), ("min", "plus"), ("max", "times"), ("lor", "land"),
             ("any", "pair"), ("plus", "pair"), ("min", "first"), ("min", "second"),
             ("plus", "minus"), ("max", "min"), ("min", "times"), ("max", "plus"),
             ("plus", "min"), ("min", "div"))
UNARY = {"abs": "abs", "neg": "ainv", "identity": "identity", "sqrt": "sqrt"}
SELECTORS = ("tril", "triu", "diag", "offdiag", "==", "!=", ">", ">=", "<", "<=", "nonzero")
OPERATIONS = ("mxm", "mxv", "vxm", "ewise_add", "ewise_mult", "apply", "apply_bound", "select",
              "reduce_rows", "reduce_cols", "reduce_scalar", "extract", "assign")


def g_binary(name):
    return "cdiv" if name == "div" else name  # RULE 2


# --- operands ----------------------------------------------------------------------------


@dataclasses.dataclass
class Operand:
    """Stored data of one operand; the operation reads it transposed when ``transposed``."""
    name: str
    dtype: str
    shape: tuple          # stored shape
    coords: tuple         # (rows, cols) or (indices,), lists
    vals: list
    transposed: bool = False

    @property
    def is_matrix(self):
        return len(self.shape) == 2

    def ref(self):
        return f"{self.name}.T" if self.transposed else self.name

    def logical_shape(self):
        return self.shape[::-1] if self.transposed else self.shape

    def untransposed(self):
        """The same logical operand stored as it is read (no ``.T``)."""
        if not self.transposed:
            return self
        r, c = self.coords
        order = sorted(range(len(r)), key=lambda t: (c[t], r[t]))
        return dataclasses.replace(self, shape=self.shape[::-1], transposed=False,
                                   coords=([c[t] for t in order], [r[t] for t in order]),
                                   vals=[self.vals[t] for t in order])

    def without(self, t):
        return dataclasses.replace(self, coords=tuple(x[:t] + x[t + 1:] for x in self.coords),
                                   vals=self.vals[:t] + self.vals[t + 1:])

    def _vals_code(self):
        return "[" + ", ".join(_lit(v) for v in self.vals) + "]"

    def gbdist_code(self, on_device):
        dev = ", on_device=True" if on_device else ""
        coords = ", ".join(repr(list(x)) for x in self.coords)
        shape = self.shape if self.is_matrix else self.shape[0]
        cls = "gb.Matrix" if self.is_matrix else "gb.Vector"
        return (f"{self.name} = {cls}.from_coo({coords}, {self._vals_code()}, {shape}, "
                f"dtype={_np_name(self.dtype)}{dev})")

    def graphblas_code(self):
        coords = ", ".join(repr(list(x)) for x in self.coords)
        vals = f"np.array({self._vals_code()}, dtype={_np_name(self.dtype)})"
        if self.is_matrix:
            return (f"{self.name} = Matrix.from_coo({coords}, {vals}, nrows={self.shape[0]}, "
                    f"ncols={self.shape[1]}, dtype=dtypes.{GB_TYPE[self.dtype]})")
        return (f"{self.name} = Vector.from_coo({coords}, {vals}, size={self.shape[0]}, "
                f"dtype=dtypes.{GB_TYPE[self.dtype]})")

    def max_abs(self):
        a = np.abs(np.asarray(self.vals, dtype=np.float64)) if self.vals else np.zeros(0)
        a = a[np.isfinite(a)]
        return float(a.max()) if a.size else 0.0


def _np_name(dtype):
    return "np.bool_" if dtype == "bool" else f"np.{dtype}"


def _lit(v):
    if isinstance(v, (bool, np.bool_)):
        return repr(bool(v))
    if isinstance(v, (int, np.integer)):
        return repr(int(v))
    v = float(v)
    if np.isnan(v):
        return "np.nan"
    if np.isinf(v):
        return "np.inf" if v > 0 else "-np.inf"
    return repr(v)


def random_values(rng, n, dtype, extreme):
    dt = np.dtype(dtype)
    if dt == np.bool_:
        return [bool(x) for x in rng.random(n) < 0.6]
    if dt.kind == "i":
        v = rng.integers(-3, 5, n).astype(np.int64)
        if extreme and n:
            info = np.iinfo(dt)
            pool = [info.max, info.min, info.max - 1, info.min + 1, 2 ** (info.bits // 2),
                    -(2 ** (info.bits // 2)), 2 ** (info.bits - 2)]
            k = rng.integers(0, n + 1)
            for t in rng.choice(n, size=min(k, n), replace=False):
                v[t] = pool[rng.integers(len(pool))]
        return [int(x) for x in v.astype(dt)]
    v = rng.integers(-12, 13, n) / 4.0
    if extreme and n:
        pool = [np.inf, -np.inf, np.nan, 0.1, 1 / 3, -2.75, 3e9, -3e9, 1e10, 9.3e18, -1e19, 1e30]
        if dt == np.float64:
            pool += [1e300, -1e300]
        k = rng.integers(0, n + 1)
        for t in rng.choice(n, size=min(k, n), replace=False):
            v[t] = pool[rng.integers(len(pool))]
    return [float(x) for x in v.astype(dt)]


def random_operand(rng, name, shape, dtype, extreme=False, density=None):
    size = int(np.prod(shape))
    p = density if density is not None else rng.choice([0.0, 0.15, 0.35, 0.6, 1.0],
                                                      p=[0.05, 0.3, 0.35, 0.2, 0.1])
    keys = np.flatnonzero(rng.random(size) < p)
    vals = random_values(rng, keys.size, dtype, extreme)
    if len(shape) == 2:
        n = max(shape[1], 1)
        coords = ([int(k // n) for k in keys], [int(k % n) for k in keys])
    else:
        coords = ([int(k) for k in keys],)
    return Operand(name, dtype, tuple(int(s) for s in shape), coords, vals)


# --- cases -------------------------------------------------------------------------------


@dataclasses.dataclass
class Case:
    operation: str
    operands: dict                     # name -> Operand (A, B, u, V, M, C)
    op: object = None                  # semiring (add, mul), op name, monoid, selector
    k: object = None                   # select thunk (code), bound scalar (code)
    side: str = None                   # "left" / "right" for a bound scalar
    index: tuple = None                # extract / assign index codes
    mask: tuple = None                 # (kind "S" | "V" | "bare", complement)
    accum: str = None
    replace: bool = False
    dtype: str = None                  # dtype=
    compensated: bool = False
    seed: int = 0

    def op_names(self):
        if self.operation in ("mxm", "mxv", "vxm"):
            return list(self.op)
        if self.operation in ("select", "extract", "assign"):
            return []
        return [self.op]

    def monoid(self):
        """The ⊕ of a product or the monoid of a reduction (None for other operations)."""
        if self.operation in ("mxm", "mxv", "vxm"):
            return self.op[0]
        if self.operation.startswith("reduce"):
            return self.op
        return None

    def inputs(self):
        names = {"mxm": "AB", "mxv": "Au", "vxm": "uA", "ewise_add": "AB", "ewise_mult": "AB",
                 "apply": "A", "apply_bound": "A", "select": "A", "reduce_rows": "A",
                 "reduce_cols": "A", "reduce_scalar": "A", "extract": "A", "assign": "V"}
        return [self.operands[n] for n in names[self.operation] if n in self.operands]

    def op_type(self):
        """The domain, the type the ops are evaluated in, by gbdist's rule (RULE 1)."""
        if self.operation in ("select", "extract"):
            return self.operands["A"].dtype if self.dtype is None else self.dtype
        if self.operation == "assign":
            return self.operands["C"].dtype
        if self.dtype is not None:
            return self.dtype
        if self.monoid() in BOOL_MONOIDS:  # lor / land are monoids on bool only
            return "bool"
        scalars = [eval(self.k, {"np": np})] if self.operation == "apply_bound" else []
        rt = np.result_type(*[np.dtype(o.dtype) for o in self.inputs()], *scalars)
        if rt.kind == "f" or all(n in KEEPS for n in self.op_names()):
            return str(rt)
        return "float64"

    def result_type(self):
        """The result's type (RULE 10): the op's type except for ewise pair / eq / ne /
        power, which follow python-graphblas's untyped op."""
        t = self.op_type()
        if self.operation not in ("ewise_add", "ewise_mult"):
            return t
        if self.op == "pair" and self.dtype is None:
            return "int64"
        if self.op in ("eq", "ne"):
            return "bool"
        if self.op == "power" and self.dtype is None:
            return str(np.result_type(*[np.dtype(o.dtype) for o in self.inputs()]))
        return t

    def result_shape(self):
        o = self.operands
        if self.operation == "mxm":
            return (o["A"].logical_shape()[0], o["B"].logical_shape()[1])
        if self.operation == "mxv":
            return (o["A"].logical_shape()[0],)
        if self.operation == "vxm":
            return (o["A"].logical_shape()[1],)
        if self.operation == "reduce_rows":
            return (o["A"].logical_shape()[0],)
        if self.operation == "reduce_cols":
            return (o["A"].logical_shape()[1],)
        if self.operation == "extract":
            A = o["A"]
            shp = A.logical_shape()
            return tuple(_index_len(ix, n) for ix, n in zip(self.index, shp))
        if self.operation == "assign":
            return o["C"].shape
        return o["A"].logical_shape()

    # --- the two programs ----------------------------------------------------------------

    def gbdist_source(self, backend):
        dev = backend == "cuda"
        lines = [o.gbdist_code(dev) for o in self.operands.values()]
        o, kw = self.operands, []
        if self.mask is not None:
            kind, comp = self.mask
            m = "M" if kind == "bare" else f"M.{kind}"
            kw.append(f"mask={'~' if comp else ''}{m}")
        if self.accum:
            kw.append(f"accum=gb.ops.{self.accum}")
        if "C" in o and self.operation != "assign":
            kw.append("out=C")
        if self.replace:
            kw.append("replace=True")
        if self.dtype and self.operation not in ("assign",):
            kw.append(f"dtype={_np_name(self.dtype)}")
        if self.compensated:
            kw.append("compensated=True")
        kw.append(f"backend={backend!r}")
        if self.operation == "reduce_scalar":
            kw = [x for x in kw if x.startswith(("dtype", "backend"))]
        kws = "".join(", " + x for x in kw)
        op = self.operation
        if op in ("mxm", "mxv", "vxm"):
            add, mul = self.op
            name = f"{add}_{mul}"
            sr = (f"gb.semirings.{name}" if name in gb.semirings
                  else f"gb.semiring(gb.ops.{mul}, gb.ops.{add})")
            a, b = {"mxm": ("A", "B"), "mxv": ("A", "u"), "vxm": ("u", "A")}[op]
            call = f"gr.{op}({o[a].ref()}, {o[b].ref()}, {sr}{kws})"
        elif op in ("ewise_add", "ewise_mult"):
            call = f"gr.{op}({o['A'].ref()}, {o['B'].ref()}, gb.ops.{self.op}{kws})"
        elif op == "apply":
            call = f"gr.apply(gb.ops.{self.op}, {o['A'].ref()}{kws})"
        elif op == "apply_bound":
            call = f"gr.apply(gb.ops.{self.op}, {o['A'].ref()}, {self.side}={self.k}{kws})"
        elif op == "select":
            call = f"gr.select({o['A'].ref()}, {self.op!r}, {self.k}{kws})"
        elif op in ("reduce_rows", "reduce_cols", "reduce_scalar"):
            call = f"gr.{op}({o['A'].ref()}, gb.ops.{self.op}{kws})"
        elif op == "extract":
            idx = ", ".join(self.index)
            call = f"gr.extract({o['A'].ref()}, {idx}{kws})"
        elif op == "assign":
            value = o["V"].ref() if "V" in o else self.k
            idx = ", ".join(self.index)
            call = f"gr.assign(C, {value}, {idx}{kws})"
        lines.append(f"R = {call}")
        return "\n".join(lines)

    def graphblas_source(self):
        o = self.operands
        lines = [x.graphblas_code() for x in o.values()]
        X = f"dtypes.{GB_TYPE[self.op_type()]}"
        op = self.operation
        if op in ("mxm", "mxv", "vxm"):
            add, mul = self.op
            t = self.op_type()
            gadd = "lor" if (add == "plus" and t == "bool") else add  # RULE 3
            gmul = g_binary(mul)
            name = f"{gadd}_{gmul}"
            try:
                getattr(gsemiring, name)[GB_TYPE[t]]
                sr = f"semiring.{name}[{X}]"
            except (AttributeError, KeyError):
                sr = f"Semiring.register_anonymous(monoid.{gadd}, binary.{gmul})[{X}]"  # RULE 3
            a, b = {"mxm": ("A", "B"), "mxv": ("A", "u"), "vxm": ("u", "A")}[op]
            expr = f"{o[a].ref()}.{op}({o[b].ref()}, {sr})"
        elif op in ("ewise_add", "ewise_mult"):
            typed = "" if self.op == "pair" and self.dtype is None else f"[{X}]"  # RULE 10
            expr = f"{o['A'].ref()}.{op}({o['B'].ref()}, binary.{g_binary(self.op)}{typed})"
        elif op == "apply":
            expr = f"{o['A'].ref()}.apply(unary.{UNARY[self.op]}[{X}])"
        elif op == "apply_bound":
            s = f"Scalar.from_value({self.k}, dtype={X})"
            expr = f"{o['A'].ref()}.apply(binary.{g_binary(self.op)}[{X}], {self.side}={s})"
        elif op == "select":
            sel, k = (("!=", "0") if self.op == "nonzero" else (self.op, self.k))  # RULE 7
            if sel not in ("tril", "triu", "diag", "offdiag"):
                k = f"Scalar.from_value({k}, dtype=dtypes.{GB_TYPE[o['A'].dtype]})"
            expr = f"{o['A'].ref()}.select({sel!r}, {k})"
        elif op in ("reduce_rows", "reduce_cols", "reduce_scalar"):
            t = self.op_type()
            m = "lor" if (self.op == "plus" and t == "bool") else self.op  # RULE 3
            meth = {"reduce_rows": "reduce_rowwise", "reduce_cols": "reduce_columnwise",
                    "reduce_scalar": "reduce_scalar" if o["A"].is_matrix else "reduce"}[op]
            extra = ", allow_empty=False" if op == "reduce_scalar" else ""  # RULE 5
            expr = f"{o['A'].ref()}.{meth}(monoid.{m}[{X}]{extra})"
            if op == "reduce_scalar":
                lines.append(f"R = {expr}.new()")
                return "\n".join(lines)
        elif op == "extract":
            expr = f"{o['A'].ref()}[{', '.join(_g_index(i) for i in self.index)}]"
        elif op == "assign":
            value = o["V"].ref() if "V" in o else self.k
        # C: out= (or assign's C), else an empty result of the op's type
        if "C" not in o:
            shp = self.result_shape()
            Z = f"dtypes.{GB_TYPE[self.result_type()]}"  # RULE 10
            if len(shp) == 2:
                lines.append(f"C = Matrix({Z}, nrows={shp[0]}, ncols={shp[1]})")
            else:
                lines.append(f"C = Vector({Z}, size={shp[0]})")
        kw = []
        if self.mask is not None:
            kind, comp = self.mask
            m = "M.V" if kind == "bare" else f"M.{kind}"  # RULE 6
            kw.append(f"mask={'~' if comp else ''}{m}")
        if self.accum:
            kw.append(f"accum=binary.{g_binary(self.accum)}")  # RULE 4: untyped
        if self.replace and self.mask is not None:  # RULE 6
            kw.append("replace=True")
        target = f"C({', '.join(kw)})" if kw else "C"
        if op == "assign":
            lines.append(f"{target}[{', '.join(_g_index(i) for i in self.index)}] << {value}")
        else:
            lines.append(f"{target} << {expr}")
        lines.append("R = C")
        return "\n".join(lines)

    def describe(self):
        o = self.operands
        dts = "/".join(x.dtype for x in self.inputs())
        feats = []
        if any(x.transposed for x in o.values()):
            feats.append("T")
        if self.mask:
            feats.append(("~" if self.mask[1] else "") + self.mask[0])
        if self.accum:
            feats.append("accum=" + self.accum)
        if self.replace:
            feats.append("replace")
        if "C" in o and self.operation != "assign":
            feats.append("out:" + o["C"].dtype)
        if self.dtype:
            feats.append("dtype=" + self.dtype)
        op = "_".join(self.op) if isinstance(self.op, tuple) else self.op
        return f"{self.operation}[{op}] {dts}→{self.op_type()} {' '.join(feats)}"


def _index_len(code, n):
    if code == "None":
        return n
    ix = eval(code)
    if isinstance(ix, slice):
        return len(range(*ix.indices(n)))
    return len(ix)


def _g_index(code):
    if code == "None":
        return ":"
    ix = eval(code)
    if isinstance(ix, slice):
        return ":".join("" if v is None else str(v) for v in (ix.start, ix.stop, ix.step))
    return code if ix else "np.array([], dtype=np.int64)"  # [] would be read as float64


def _dim(rng):
    return int(rng.choice([0, 1, 2, 3, 4, 5, 6, 7], p=[0.02, 0.1, 0.15, 0.2, 0.2, 0.15, 0.1, 0.08]))


def _dtypes(rng, n):
    """Operand dtypes: one type for all (60%), else each its own (mixed)."""
    if rng.random() < 0.6:
        return [str(rng.choice(DTYPES))] * n
    return [str(rng.choice(DTYPES)) for _ in range(n)]


def _maybe_transposed(rng, name, shape, dtype, extreme, allow=True):
    t = allow and rng.random() < 0.25
    op = random_operand(rng, name, shape[::-1] if t else shape, dtype, extreme)
    op.transposed = t
    return op


def _scalar_code(rng, dtype):
    """A bound scalar: a Python int / float / bool or a NumPy scalar."""
    kind = rng.integers(5)
    if kind == 0:
        return repr(int(rng.integers(-3, 5)))
    if kind == 1:
        return repr(float(rng.integers(-12, 13) / 4))
    if kind == 2:
        return repr(bool(rng.random() < 0.5))
    d = str(rng.choice(DTYPES))
    v = random_values(rng, 1, d, rng.random() < 0.2)[0]
    return f"{_np_name(d)}({_lit(v)})"


def _index_code(rng, n, unique):
    r = rng.random()
    if r < 0.2:
        return "None"
    if r < 0.4:
        start = int(rng.integers(-1, n + 1))
        stop = int(rng.integers(-1, n + 2))
        step = int(rng.choice([1, 1, 2, -1, -2]))
        parts = [None if start < 0 else start, None if stop < 0 else stop, step]
        return f"slice({parts[0]}, {parts[1]}, {parts[2]})"
    if unique:
        k = int(rng.integers(0, n + 1))
        return repr([int(x) for x in rng.permutation(n)[:k]])
    k = int(rng.integers(0, n + 3)) if n else 0
    return repr([int(x) for x in rng.integers(0, n, k)]) if n else "[]"


def make_case(operation, seed):
    rng = np.random.default_rng(seed)
    extreme = rng.random() < EXTREME
    ops = {}
    case = Case(operation, ops, seed=seed)
    m, k, n = _dim(rng), _dim(rng), _dim(rng)
    if operation == "mxm":
        da, db = _dtypes(rng, 2)
        ops["A"] = _maybe_transposed(rng, "A", (m, k), da, extreme)
        ops["B"] = _maybe_transposed(rng, "B", (k, n), db, extreme)
        case.op = SEMIRINGS[rng.integers(len(SEMIRINGS))]
    elif operation in ("mxv", "vxm"):
        da, du = _dtypes(rng, 2)
        ops["A"] = _maybe_transposed(rng, "A", (m, k), da, extreme)
        size = k if operation == "mxv" else m
        ops["u"] = random_operand(rng, "u", (size,), du, extreme)
        case.op = SEMIRINGS[rng.integers(len(SEMIRINGS))]
        case.compensated = rng.random() < 0.1
    elif operation in ("ewise_add", "ewise_mult"):
        da, db = _dtypes(rng, 2)
        if rng.random() < 0.3:
            ops["A"] = random_operand(rng, "A", (m,), da, extreme)
            ops["B"] = random_operand(rng, "B", (m,), db, extreme)
        else:
            ops["A"] = _maybe_transposed(rng, "A", (m, n), da, extreme)
            ops["B"] = _maybe_transposed(rng, "B", (m, n), db, extreme)
        case.op = BINARY_OPS[rng.integers(len(BINARY_OPS))]
    elif operation in ("apply", "apply_bound", "select", "reduce_rows", "reduce_cols",
                       "reduce_scalar", "extract"):
        (da,) = _dtypes(rng, 1)
        vec_ok = operation in ("apply", "apply_bound", "reduce_scalar", "extract") or (
            operation == "select")
        if vec_ok and rng.random() < 0.3:
            ops["A"] = random_operand(rng, "A", (m,), da, extreme)
        else:
            ops["A"] = _maybe_transposed(rng, "A", (m, n), da, extreme)
        A = ops["A"]
        if operation == "apply":
            case.op = str(rng.choice(list(UNARY)))
        elif operation == "apply_bound":
            case.op = BINARY_OPS[rng.integers(len(BINARY_OPS))]
            case.side = "left" if rng.random() < 0.5 else "right"
            case.k = _scalar_code(rng, da)
        elif operation == "select":
            sels = SELECTORS if A.is_matrix else [s for s in SELECTORS if s not in
                                                  ("tril", "triu", "diag", "offdiag")]
            case.op = str(rng.choice(sels))
            if case.op in ("tril", "triu", "diag", "offdiag"):
                case.k = repr(int(rng.integers(-2, 3)))
            else:  # RULE 7: a thunk of the operand's type
                case.k = _lit(random_values(rng, 1, da, False)[0])
        elif operation in ("reduce_rows", "reduce_cols", "reduce_scalar"):
            case.op = MONOIDS[rng.integers(len(MONOIDS))]
        elif operation == "extract":
            case.index = tuple(_index_code(rng, s, unique=False) for s in A.logical_shape())
    elif operation == "assign":
        (dc,) = _dtypes(rng, 1)
        shape = (m, n) if rng.random() < 0.7 else (m,)
        ops["C"] = random_operand(rng, "C", shape, dc, extreme)
        case.index = tuple(_index_code(rng, s, unique=True) for s in shape)
        region = tuple(_index_len(ix, s) for ix, s in zip(case.index, shape))
        if rng.random() < 0.35:
            case.k = _scalar_code(rng, dc)
        else:
            dv = dc if rng.random() < 0.6 else str(rng.choice(DTYPES))
            ops["V"] = _maybe_transposed(rng, "V", region, dv, extreme, allow=len(region) == 2)
    else:
        raise AssertionError(operation)
    shape = case.result_shape()
    if operation != "reduce_scalar":
        if rng.random() < 0.35:
            case.mask = (str(rng.choice(["S", "V", "bare"], p=[0.45, 0.45, 0.1])),
                         bool(rng.random() < 0.4))
            if case.mask[0] == "bare":
                case.mask = ("bare", False)
            ops["M"] = random_operand(rng, "M", shape, str(rng.choice(DTYPES)))
        if operation != "assign" and rng.random() < 0.35:
            ops["C"] = random_operand(rng, "C", shape, str(rng.choice(DTYPES)), extreme)
        if "C" in ops and rng.random() < 0.4:
            case.accum = BINARY_OPS[rng.integers(len(BINARY_OPS))]
        case.replace = bool(rng.random() < 0.3)
    if operation != "assign" and rng.random() < 0.12:
        case.dtype = str(rng.choice(DTYPES))
        if case.monoid() in BOOL_MONOIDS:  # dtype= other than bool is refused for lor / land
            case.dtype = "bool"
    if "div" in case.op_names() and case.op_type() == "bool":  # RULE 9
        case.dtype = "float64"
    if case.accum == "div" and ops.get("C") is not None and ops["C"].dtype == "bool":
        case.accum = "first"  # RULE 9: the accumulator is evaluated in C's type
    # operands in a fixed order: data first, then mask and C
    case.operands = {nm: ops[nm] for nm in ("A", "B", "u", "V", "M", "C") if nm in ops}
    return case


# --- running and comparing ---------------------------------------------------------------

G_NAMESPACE = dict(np=np, Matrix=GMatrix, Vector=GVector, Scalar=GScalar, binary=gbinary,
                   monoid=gmonoid, semiring=gsemiring, unary=gunary, dtypes=gdtypes,
                   Semiring=GSemiring)


def run_gbdist(case, backend):
    ns = dict(np=np, gb=gb, gr=gr)
    exec(case.gbdist_source(backend), ns)
    R = ns["R"]
    if isinstance(R, (gb.Matrix, gb.Vector)):
        R = R.to_host()
        if isinstance(R, gb.Matrix):
            r, c, v = R.to_coo()
            return ("M", (np.asarray(r), np.asarray(c)), np.asarray(v), np.dtype(R.dtype))
        return ("V", (np.asarray(R.indices),), np.asarray(R.values), np.dtype(R.dtype))
    return ("S", (), np.asarray([R]), np.asarray(R).dtype)


def run_graphblas(case):
    ns = dict(G_NAMESPACE)
    exec(case.graphblas_source(), ns)
    R = ns["R"]
    dt = np.dtype(R.dtype.np_type)
    if isinstance(R, GMatrix):
        r, c, v = R.to_coo()
        return ("M", (r.astype(np.int64), c.astype(np.int64)), v, dt)
    if isinstance(R, GVector):
        i, v = R.to_coo()
        return ("V", (i.astype(np.int64),), v, dt)
    return ("S", (), np.asarray([R.value], dtype=dt), dt)


def _scale(case):
    """Magnitude for the float tolerance: the largest finite input, squared when the
    operation multiplies."""
    s = max([o.max_abs() for o in case.operands.values()] + [1.0])
    if case.k is not None:
        try:
            x = float(eval(case.k, {"np": np}))
            if np.isfinite(x):
                s = max(s, abs(x))
        except (TypeError, ValueError):
            pass
    names = case.op_names() + ([case.accum] if case.accum else [])
    if any(n in ("times", "div") for n in names):
        s = s * s
    return s


def compare(case, got, want):
    """None when the results agree, else a short description of the first difference."""
    kind, gc, gv, gdt = got
    _, wc, wv, wdt = want
    if gdt != wdt:
        return f"dtype: gbdist {gdt}, graphblas {wdt}"
    for a, b in zip(gc, wc):
        if a.shape != b.shape or not np.array_equal(a, b):
            return "pattern"
    if gv.shape != wv.shape:
        return "pattern"
    if wdt.kind == "f":
        eps = float(np.finfo(wdt).eps)
        tol = 64 * eps
        atol = tol * _scale(case)
        if not np.isfinite(atol):  # a scale past float64's range would accept anything
            atol = 0.0
        ok = np.isclose(gv.astype(np.float64), wv.astype(np.float64), rtol=tol,
                        atol=atol, equal_nan=True)
        # ±inf must match exactly (isclose does), NaN only NaN
    else:
        ok = gv == wv
    if not bool(np.all(ok)):
        return "values"
    return None


def run_case(case, backend):
    """(outcome, detail): "agree", or "disagree: ..." with the two results."""
    try:
        want = run_graphblas(case)
    except Exception as e:  # a translation bug: the generator must make valid cases
        return "graphblas-error", f"{type(e).__name__}: {e}"
    try:
        got = run_gbdist(case, backend)
    except Exception as e:
        return "gbdist-error", f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
    diff = compare(case, got, want)
    if diff is None:
        return "agree", ""
    return diff.split(":")[0], f"{diff}\n  gbdist:    {_show(got)}\n  graphblas: {_show(want)}"


def _show(res):
    kind, coords, vals, dt = res
    if kind == "S":
        return f"{vals[0]!r} ({dt})"
    pts = list(zip(*[c.tolist() for c in coords], vals.tolist()))
    s = ", ".join(f"{p[:-1] if len(p) > 2 else p[0]}: {p[-1]!r}" for p in pts[:12])
    return f"{{{s}{', ...' if len(pts) > 12 else ''}}} ({dt})"


def shrink(case, backend, outcome, budget=200):
    """Drop options and stored entries while the case still fails the same way."""
    def fails(c):
        return run_case(c, backend)[0] == outcome

    def variants(c):
        o = c.operands
        if c.mask is not None:
            yield dataclasses.replace(c, mask=None, replace=False,
                                      operands={k: v for k, v in o.items() if k != "M"})
        if c.accum:
            yield dataclasses.replace(c, accum=None)
        if c.replace:
            yield dataclasses.replace(c, replace=False)
        if "C" in o and c.operation != "assign":
            yield dataclasses.replace(c, accum=None, operands={k: v for k, v in o.items()
                                                               if k != "C"})
        if c.dtype:
            yield dataclasses.replace(c, dtype=None)
        if c.compensated:
            yield dataclasses.replace(c, compensated=False)
        for name, x in o.items():
            if x.transposed:
                yield dataclasses.replace(c, operands={**o, name: x.untransposed()})
        for name, x in o.items():
            for t in range(len(x.vals)):
                yield dataclasses.replace(c, operands={**o, name: x.without(t)})

    tries = 0
    progress = True
    while progress and tries < budget:
        progress = False
        for v in variants(case):
            tries += 1
            if fails(v):
                case, progress = v, True
                break
            if tries >= budget:
                break
    return case


def report(case, backend, outcome, detail):
    return (f"--- {case.describe()}  [{outcome}, seed {case.seed}]\n  {detail}\n"
            f"# gbdist\n{case.gbdist_source(backend)}\n"
            f"# python-graphblas\n{case.graphblas_source()}\n")


def _class_key(case, outcome):
    op = "_".join(case.op) if isinstance(case.op, tuple) else case.op
    return (case.operation, op, case.op_type(), outcome)


@pytest.mark.parametrize("operation", OPERATIONS)
def test_vs_graphblas(operation, kernels, capsys):
    """Random cases of ``operation`` agree with SuiteSparse:GraphBLAS on every kernel set."""
    base = 24_000 + 1_000 * OPERATIONS.index(operation)
    t0 = time.perf_counter()
    outcomes = collections.Counter()
    by_type = collections.Counter()
    failures = collections.OrderedDict()  # class -> (case, outcome, detail, count)
    for s in range(CASES_PER_OP):
        case = make_case(operation, base + s)
        outcome, detail = run_case(case, kernels)
        outcomes[outcome] += 1
        by_type[(case.op_type(), outcome)] += 1
        if outcome != "agree":
            key = _class_key(case, outcome)
            if key in failures:
                failures[key][3] += 1
            else:
                failures[key] = [case, outcome, detail, 1]
    shown = []
    for i, (key, (case, outcome, detail, count)) in enumerate(failures.items()):
        if i < SHRINK_PER_CLASS * 8 and outcome != "graphblas-error":
            case = shrink(case, kernels, outcome)
            outcome, detail = run_case(case, kernels)
        shown.append(f"[{count}x] " + report(case, kernels, outcome, detail))
    if SLOW:
        with capsys.disabled():
            print(f"\n{operation} on {kernels}: {CASES_PER_OP} cases in "
                  f"{time.perf_counter() - t0:.1f} s: {dict(outcomes)}")
            for t in DTYPES:
                row = {o: c for (tt, o), c in by_type.items() if tt == t}
                if row:
                    print(f"  {t:8s} {row}")
            for key, (_, _, _, count) in failures.items():
                print(f"  FAIL {count:4d}x {key}")
    assert not failures, (f"{sum(f[3] for f in failures.values())} of {CASES_PER_OP} cases "
                          f"disagree ({len(failures)} classes):\n" + "\n".join(shown))


# --- the documented differences ----------------------------------------------------------


def test_documented_differences():
    """The differences from python-graphblas that the translation rules above stand for
    (docs/graph_api.md, "Differences from SuiteSparse:GraphBLAS"): each one listed holds,
    so the list stays true."""
    A32 = GMatrix.from_coo([0, 1], [1, 0], np.array([2, 3], np.int32), nrows=2, ncols=2)
    a32 = gb.Matrix.from_coo([0, 1], [1, 0], np.array([2, 3], np.int32), (2, 2))
    Ab = GMatrix.from_coo([0, 1], [1, 0], [True, True], nrows=2, ncols=2)
    ab = gb.Matrix.from_coo([0, 1], [1, 0], [True, True], (2, 2))
    # a bound Python int is weak (NumPy's rule): int32 stays int32; python-graphblas: INT64
    assert gr.apply(gb.ops.plus, a32, right=2).dtype == np.int32
    assert A32.apply(gbinary.plus, right=2).dtype == gdtypes.INT64
    # div is true division: float64 for integers; GrB_DIV on integers is C division
    assert gr.ewise_mult(a32, a32, gb.ops.div).dtype == np.float64
    assert A32.ewise_mult(A32, gbinary.cdiv).dtype == gdtypes.INT32
    assert A32.ewise_mult(A32, gbinary.truediv).dtype == gdtypes.FP64
    # plus on bool is or (bool); python-graphblas counts plus_pair of bools in INT64 and
    # has no plus_times / plus monoid over BOOL
    assert gr.mxm(ab, ab, gb.semirings.plus_pair).dtype == np.bool_
    assert Ab.mxm(Ab, gsemiring.plus_pair).dtype == gdtypes.INT64
    assert gr.reduce_rows(ab, gb.ops.plus).dtype == np.bool_
    with pytest.raises(KeyError):
        Ab.reduce_rowwise(gmonoid.plus)
    # the count is asked for with dtype=
    assert gr.mxm(ab, ab, gb.semirings.plus_pair, dtype=np.int64).dtype == np.int64
    # lor / land are monoids on bool only: the result is bool, as in python-graphblas (which
    # reads even monoid.lor[INT64] as LOR_BOOL); gbdist refuses dtype= of another type
    assert gr.reduce_rows(a32, gb.ops.lor).dtype == np.bool_
    assert A32.reduce_rowwise(gmonoid.lor).dtype == gdtypes.BOOL
    assert A32.reduce_rowwise(gmonoid.lor[gdtypes.INT64]).dtype == gdtypes.BOOL
    with pytest.raises(gb.TypeCheckError):
        gr.reduce_rows(a32, gb.ops.lor, dtype=np.int64)
    # div in a bool domain: 0 / 0 is NaN, true; GraphBLAS's DIV_BOOL is FIRST (false)
    f = gb.Vector.from_coo([0], [False], 1)
    gf = GVector.from_coo([0], [False], size=1)
    assert gr.ewise_mult(f, f, gb.ops.div, dtype=np.bool_).values.tolist() == [True]
    assert gf.ewise_mult(gf, gbinary.cdiv[gdtypes.BOOL]).new().to_coo()[1].tolist() == [False]
    # select by value compares the stored values with k as numbers; GraphBLAS casts the
    # thunk to the operand's type first (1.5 -> 1 for int32 values)
    v = gb.Vector.from_coo([0, 1, 2], np.array([1, 2, 3], np.int32), 3)
    gv = GVector.from_coo([0, 1, 2], np.array([1, 2, 3], np.int32), size=3)
    from graphblas import select as gselect
    assert gr.select(v, ">=", 1.5).values.tolist() == [2, 3]
    thunk = GScalar.from_value(1.5, dtype=gdtypes.FP64)
    assert gv.select(gselect.valuege[gdtypes.INT32], thunk).new().to_coo()[1].tolist() == [1, 2, 3]
    # from_coo(dtype=INT64) of floats casts as SuiteSparse (python-graphblas's dup(dtype=));
    # (python-graphblas's from_coo(..., dtype=INT64) converts a NumPy array with astype
    # first, whose inf / NaN are platform-defined: not asserted here)
    fv = np.array([np.inf, np.nan, -2.7])
    top = np.iinfo(np.int64).max
    assert gb.Vector.from_coo([0, 1, 2], fv, 3, dtype=np.int64).values.tolist() == [top, 0, -2]
    assert GVector.from_coo([0, 1, 2], fv, size=3).dup(
        dtype=gdtypes.INT64).to_coo()[1].tolist() == [top, 0, -2]
    # reduce_scalar of nothing is the identity (python-graphblas: an empty Scalar by default)
    e = gb.Vector.sparse(3, np.int32)
    assert gr.reduce_scalar(e, gb.ops.min) == np.iinfo(np.int32).max
    assert GVector(gdtypes.INT32, size=3).reduce(gmonoid.min).new().is_empty
    # replace=True without a mask is accepted (it changes nothing); python-graphblas refuses it
    C = gb.Matrix.from_coo([0], [0], [5], (2, 2), dtype=np.int32)
    gr.apply(gb.ops.abs, a32, out=C, replace=True)
    assert C.nvals == 2
    GC = GMatrix(gdtypes.INT32, nrows=2, ncols=2)
    with pytest.raises(TypeError):
        GC(replace=True) << A32.apply(gunary.abs)
