"""Operators: binary and unary ops as sympy formulas with a domain, and the built-ins.

An :class:`Op` is a formula over ``x`` (and ``y``) plus the domain of inputs it
accepts. Its properties are derived from the formula, not declared: whether a
binary op is a monoid (:func:`as_monoid`: identity, idempotent, invertible,
commutative; :mod:`gbdist.algebra.monoids`), proven with :mod:`gbdist.algebra.proofs`.
The built-in ops (``plus``, ``times``, ``absdiff`` ...) are defined at the end.

Every op also carries its formula as a *term* (:mod:`gbdist.algebra.terms`): its key,
its values on arrays and what a stored record holds. The built-in ops and their monoids
are built by sympy and proved once, then read back from a stored record by later
processes (:func:`_builtins`), whose ops rebuild their sympy formula only when something
reads it (:class:`~gbdist.algebra.lazy.Deferred`): importing this module imports sympy
only when no record is there yet.
"""
from __future__ import annotations

import inspect
from dataclasses import dataclass, field

import numpy as np

from . import records, terms
from .lazy import Deferred
from .lazy import sympy as sp
from ..errors import DefinitionError, DomainError, GbdistError
from .evaluate import apply_binary, apply_unary, constant_value, evaluate  # noqa: F401 (gb.ops.evaluate ...)
from .monoids import (  # noqa: F401 (gb.ops.Monoid, gb.ops.as_monoid, gb.monoid)
    _PROVEN, _SCREEN, Monoid, OpBase, as_monoid, monoid)

DOMAINS = ("real", "nonnegative", "boolean")

# names of the sympy-side modules that gb.ops offers too (gb.ops.X, gb.ops.Sym, ...):
# imported on first read (PEP 562), as each imports sympy
_FORMULAS = ("X", "Y", "MAX_FORMULA_DEPTH", "MAX_FORMULA_SIZE", "_expr", "_formula_key",
             "_too_deep", "build", "building", "evaluated", "formula_depth", "formula_size",
             "guarded", "piecewise", "show", "substitute")
_SYM = ("Sym", "s_abs", "s_exp", "s_isnan", "s_log", "s_max", "s_min", "s_sqrt", "s_where")


def __getattr__(name: str):
    if name in _FORMULAS:
        from . import formulas
        return getattr(formulas, name)
    if name in _SYM:
        from . import sym
        return getattr(sym, name)
    import difflib  # gb.ops.absdif: what gb.ops holds and the closest op (not "module …")
    known = sorted(k for k, v in globals().items() if isinstance(v, (Op, Monoid)))
    close = difflib.get_close_matches(name, known, n=1) if not name.startswith("__") else []
    raise AttributeError(f"gb.ops has no op {name!r}" + (f"; did you mean gb.ops.{close[0]}?"
                         if close else "") + " (gb.op(...) defines a new one)")


# ---------------------------------------------------------------------------
# Operators
# ---------------------------------------------------------------------------


def _derive_domain(formula: sp.Expr) -> str:
    """``nonnegative`` when the formula takes a root or a log of its inputs, unless the
    argument is known to be nonnegative or the root sits in a ``where`` branch whose
    condition states it (``where(x >= 0, x^0.5, 0)`` is defined for every real x)."""
    from .formulas import X, Y
    stack = [(formula, frozenset())]
    while stack:
        node, guards = stack.pop()
        if isinstance(node, sp.Piecewise):
            for branch, cond in node.args:
                stack.append((branch, guards | _nonnegative_facts(cond)))
                stack.append((cond, guards))
            continue
        arg = None
        if isinstance(node, sp.Pow) and node.exp.is_Rational and not node.exp.is_integer:
            arg = node.base
        elif isinstance(node, sp.log):
            arg = node.args[0]
        if arg is not None and arg.free_symbols & {X, Y} and arg not in guards \
                and not _known_nonnegative(arg):
            return "nonnegative"
        stack.extend((a, guards) for a in node.args)
    return "real"


def _nonnegative_facts(cond) -> frozenset:
    """The expressions a branch condition states to be >= 0 (or > 0): ``e >= 0``,
    ``e > 0``, ``0 <= e``, ``0 < e``, and each term of a conjunction of them."""
    terms = cond.args if isinstance(cond, sp.And) else (cond,)
    out = set()
    for t in terms:
        if isinstance(t, (sp.GreaterThan, sp.StrictGreaterThan)) and t.rhs == 0:
            out.add(t.lhs)
        elif isinstance(t, (sp.LessThan, sp.StrictLessThan)) and t.lhs == 0:
            out.add(t.rhs)
    return frozenset(out)


def _known_nonnegative(e: sp.Expr) -> bool:
    from .formulas import evaluated
    try:
        return bool(evaluated(e).is_nonnegative)
    except Exception:  # noqa: BLE001 - unknown
        return False


@dataclass(frozen=True, eq=False)
class Op(Deferred, OpBase):
    """A scalar operator: a sympy formula over ``x`` (unary) or ``x, y`` (binary)."""

    name: str
    formula: sp.Expr
    arity: int
    domain: str = "real"
    doc: str = ""
    _key: tuple = field(default=(), repr=False, compare=False)

    def __post_init__(self):
        from .formulas import (
            MAX_FORMULA_DEPTH, MAX_FORMULA_SIZE, X, Y, _too_deep, formula_depth, formula_size)
        from .columns import is_column
        extra = {s for s in self.formula.free_symbols - {X, Y} if not is_column(s)}
        if extra:
            names = ", ".join(sorted(str(s) for s in extra))
            raise DefinitionError(
                f"op {self.name!r} uses names that are not its parameters",
                got=names, hint="an op's formula may only use x (and y) and numbers",
            )
        if self.arity == 1 and Y in self.formula.free_symbols:
            raise DefinitionError(f"unary op {self.name!r} uses y", got=str(self.formula))
        if self.domain not in DOMAINS:
            raise DefinitionError(f"unknown domain for op {self.name!r}", got=self.domain,
                                  hint="one of " + ", ".join(DOMAINS))
        size = formula_size(self.formula)
        if size > MAX_FORMULA_SIZE:
            raise DefinitionError(
                f"op {self.name!r} is too large once written out",
                expected=f"at most {MAX_FORMULA_SIZE} nodes", got=f"more than {MAX_FORMULA_SIZE}",
                hint="a helper used many times is copied at each use; simplify the definition")
        depth = formula_depth(self.formula)
        if depth > MAX_FORMULA_DEPTH:
            raise _too_deep(depth)
        try:
            term = terms.encode(self.formula)
        except terms.Unsupported:
            term = None  # keyed by its sympy structure; never stored
        object.__setattr__(self, "_term", term)
        object.__setattr__(self, "_key", self._make_key())

    @classmethod
    def stored(cls, name: str, term: tuple, arity: int, domain: str, doc: str = "") -> "Op":
        """The op of a stored record: its formula is the checked ``term``, rebuilt as a
        sympy formula only when something reads ``formula``."""
        if domain not in DOMAINS or type(arity) is not int or arity not in (1, 2):
            raise terms.Invalid(f"a stored op {name!r} with arity {arity!r}, domain {domain!r}")
        from .columns import parse
        if not {n for n in terms.symbol_names(term) if parse(n) is None} <= (
                {"x"} if arity == 1 else {"x", "y"}):
            raise terms.Invalid(f"a stored op {name!r} reads other names than its arguments")
        op = object.__new__(cls)
        for k, v in (("name", name), ("arity", arity), ("domain", domain), ("doc", doc),
                     ("_term", term), ("_deferred", {"formula": term})):
            object.__setattr__(op, k, v)
        object.__setattr__(op, "_key", op._make_key())
        return op

    def _rebuild(self, name: str, data):
        return terms.decode(data)  # "formula": the sympy tree of the term, as written

    def _make_key(self) -> tuple:
        return ("op", self.arity, self._formula_text(), self.domain)

    def _formula_text(self) -> str:
        term = self.term
        if term is not None:
            return terms.text(term)
        from .formulas import _formula_key
        return "sympy:" + _formula_key(self.formula)

    @property
    def columns(self) -> tuple:
        """The column operands the formula reads (:mod:`gbdist.algebra.columns`), by name;
        () for an op over x (and y) alone."""
        found = self.__dict__.get("_columns")
        if found is None:
            from .columns import columns_of, columns_of_term
            term = self.term
            found = columns_of_term(term) if term is not None else columns_of(self.formula)
            object.__setattr__(self, "_columns", found)
        return found

    @property
    def term(self) -> tuple | None:
        """The formula as a term (:mod:`gbdist.algebra.terms`), or None when the formula
        holds a node a term does not represent."""
        return self.__dict__.get("_term")

    @property
    def key(self) -> tuple:
        """Structural key: the formula and domain (the name is only a label)."""
        return self._key

    def __eq__(self, other):
        return isinstance(other, Op) and other.key == self.key

    def __hash__(self):
        return hash(self.key)

    def __repr__(self):
        from .mathtext import math
        args = "x" if self.arity == 1 else "x, y"
        return f"op {self.name}({args}) = {math(self.formula)}"

    def __call__(self, *args):
        """Substitute scalar arguments (used when composing ops in formulas)."""
        from .formulas import X, Y, _expr, substitute
        from .sym import Sym
        if len(args) != self.arity:
            raise DefinitionError(f"op {self.name!r} takes {self.arity} argument(s)",
                                  got=f"{len(args)} argument(s)")
        subs = {X: _expr(args[0])}
        if self.arity == 2:
            subs[Y] = _expr(args[1])
        return Sym(substitute(self.formula, subs))

    def at(self, x=None, y=None) -> sp.Expr:
        """The formula with x and/or y fixed to sympy values."""
        from .formulas import X, Y, _expr
        subs = {}
        if x is not None:
            subs[X] = _expr(x)
        if y is not None:
            subs[Y] = _expr(y)
        return self.formula.subs(subs)

    def guarded_bases(self) -> tuple:
        """(what, base, variable) of each non-integer power and log of the formula whose
        argument reads one variable, outside any ``where`` branch: what the data must keep
        nonnegative. ``base`` is a term (evaluate it with
        :func:`gbdist.algebra.evaluate.evaluate_formula`, show it with
        :func:`gbdist.algebra.evaluate.formula_text`); found once per op, without sympy."""
        found = self.__dict__.get("_guarded")
        if found is None:
            term = self.term
            if term is None:
                from .formulas import guarded_bases
                found = guarded_bases(self.formula)
            else:
                found = terms.guarded_bases(term)
            object.__setattr__(self, "_guarded", found)
        return found

    def check_domain(self, values: np.ndarray, what: str) -> None:
        """Raise DomainError if ``values`` fall outside this op's domain."""
        if self.domain == "nonnegative" and values.size and np.nanmin(values) < 0:
            raise DomainError(
                f"op {self.name!r} is defined for nonnegative inputs only",
                got=f"{what} holds a negative value ({np.nanmin(values):g})",
                hint="take abs() of the data first, or use a metric defined on reals",
            )


def make_op(name: str, formula, domain: str | None = None, doc: str = "") -> Op:
    """Build an op from a Python callable over Sym arguments, or a Sym/sympy formula.

    ``make_op("chi2", lambda x, y: gb.where(x + y == 0, 0, (x - y)**2 / (x + y)))``
    """
    from .formulas import X, Y, _expr, building, guarded, piecewise
    from .sym import Sym
    with guarded(f"op {name!r}"):
        if callable(formula) and not isinstance(formula, (Sym, sp.Basic)):
            try:
                params = inspect.signature(formula).parameters
            except (TypeError, ValueError):
                raise DefinitionError(f"op {name!r}: cannot read the formula's parameters") from None
            arity = len(params)
            if arity not in (1, 2):
                raise DefinitionError(f"op {name!r} must take one or two arguments",
                                      got=f"{arity} parameter(s)")
            with building():  # one switch of sympy's evaluation for the whole formula
                try:
                    result = formula(*(Sym(s) for s in (X, Y)[:arity]))
                except (GbdistError, RecursionError, MemoryError):
                    raise
                except Exception as e:  # noqa: BLE001 - the user's own callable failed
                    raise DefinitionError(
                        f"the formula of op {name!r} raised {type(e).__name__}", got=str(e)[:200],
                        hint="it is called once, with symbolic x and y: use gb.where, gb.sqrt, "
                             "gb.log, gb.maximum ... (not math.*, numpy or if/else)") from None
                expr = _expr(result)
        else:
            expr = _expr(formula)
            arity = 2 if Y in expr.free_symbols else 1
        if isinstance(expr, (sp.logic.boolalg.BooleanFunction, sp.logic.boolalg.BooleanAtom,
                             sp.core.relational.Relational)):  # a condition: 1 where it holds, else 0
            expr = piecewise((sp.Integer(1), expr), (sp.Integer(0), sp.true))
        return Op(name, expr, arity, domain or _derive_domain(expr), doc)



# ---------------------------------------------------------------------------
# Row ops: apply(normalize, A)
# ---------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class RowScale(Op):
    """``apply(normalize, A)``: every row of A divided by its sum (a plus-reduction of
    the row), SciPy's normalisation of probability vectors (``jensenshannon``).

    Its formula is ``x``: the division by the row's sum needs that per-row scalar, so
    it is done once when the operand is bound (``gbdist.backends.rows.normalise_rows``, on the host or
    the device), after which every formula, proof and kernel sees normalised values.
    It must be the first op applied to the data, and every use of that operand in
    one expression must be normalised (else the operand would need two bindings)."""

    def _make_key(self) -> tuple:
        return ("row_scale", "sum", self.domain)


# ---------------------------------------------------------------------------
# Built-in operators: defined here by their formulas, proved once, then stored
# ---------------------------------------------------------------------------


def pow(p) -> Op:  # noqa: A001 (the issue names it pow(p))
    """Unary ``x ^ p`` for a number ``p`` (e.g. ``gb.apply(ops.pow(3), A)``)."""
    from .formulas import X
    from .sym import Sym
    return make_op(f"pow{p:g}", Sym(X) ** p, doc=f"x ^ {p:g}")


def absdiff_pow(p) -> Op:
    """Binary ``|x - y| ^ p``: Minkowski's ⊗."""
    from .formulas import X, Y
    from .sym import Sym
    return make_op(f"absdiff_pow{p:g}", abs(Sym(X) - Sym(Y)) ** p, doc=f"|x - y| ^ {p:g}")


BINARY_NAMES = ("plus", "minus", "times", "div", "min", "max", "absdiff", "sqdiff", "power",
                "ne", "eq", "lor", "land", "any", "first", "second", "pair")
UNARY_NAMES = ("abs", "sqrt", "square", "log", "exp", "identity", "neg", "nonzero")


def _define_builtins() -> dict:
    """The built-in ops (and ``normalize``), built by sympy from their formulas."""
    from .formulas import X, Y
    from .sym import Sym, s_abs, s_exp, s_log, s_max, s_min, s_sqrt
    from .sym import s_where as where
    x, y = Sym(X), Sym(Y)
    made = (
        make_op("plus", x + y, doc="x + y"),
        make_op("minus", x - y, doc="x - y"),
        make_op("times", x * y, doc="x * y"),
        make_op("div", x / y, doc="x / y"),
        make_op("min", s_min(x, y), doc="min(x, y)"),
        make_op("max", s_max(x, y), doc="max(x, y)"),
        make_op("absdiff", abs(x - y), doc="|x - y|"),
        make_op("sqdiff", (x - y) ** 2, doc="(x - y)^2"),
        make_op("power", x ** y, doc="x ^ y"),
        make_op("ne", where(x != y, 1, 0), doc="1 where x != y, else 0"),
        make_op("eq", where(x == y, 1, 0), doc="1 where x == y, else 0"),
        make_op("lor", where((x != 0) | (y != 0), 1, 0), domain="boolean", doc="x or y"),
        make_op("land", where((x != 0) & (y != 0), 1, 0), domain="boolean", doc="x and y"),
        make_op("any", lambda x, y: x, doc="either argument (GraphBLAS ANY)"),
        make_op("first", lambda x, y: x, doc="x"),
        make_op("second", lambda x, y: y, doc="y"),
        Op("pair", sp.Integer(1), 2, "real", "1 (GraphBLAS PAIR / ONEB)"),
        make_op("abs", s_abs(x), doc="|x|"),
        make_op("sqrt", s_sqrt(x), doc="sqrt(x), x >= 0"),
        make_op("square", x ** 2, doc="x^2"),
        make_op("log", s_log(x), doc="natural log, x >= 0"),
        make_op("exp", s_exp(x), doc="e^x"),
        make_op("identity", x, doc="x"),
        make_op("neg", -x, doc="-x"),
        make_op("nonzero", where(x != 0, 1, 0), doc="1 where the stored value is nonzero"),
        RowScale("normalize", X, 1, "nonnegative",
                 "each row divided by its sum (rows of nonnegative values)"),
    )
    return {op.name: op for op in made}


_STORE_FORMAT = 1  # of the record below


def _builtins() -> dict:
    """name -> op of the built-ins: read from their stored record when there is a good one
    (no sympy, no proof: :func:`_read_builtins`), else built and proved by sympy and the
    record written for the next process (:mod:`gbdist.algebra.records`). The record is keyed
    on the algebra's source text and sympy's version, so it is never older than either."""
    key = records.key_of("algebra.builtins", _STORE_FORMAT, records.code_digest("algebra"))
    found = records.load(key, "programs")
    if found is not None:
        try:
            return _read_builtins(found)
        except Exception as e:  # noqa: BLE001 - a bad record is a miss, never an error
            records.discard(key, e, "programs")
    mark, made = records.cut_short(), _define_builtins()  # (in that order)
    monoids = []
    for name in BINARY_NAMES:
        try:
            m = as_monoid(made[name])
        except DefinitionError:
            continue  # not a monoid (minus, second, ...)
        if m.op is not made[name]:
            continue  # an equal op's (first is any's formula): as_monoid returns that one
        _PROVEN[m.op.key] = m
        monoids.append([name, terms.encode(m.identity), m.idempotent, m.invertible,
                        m.commutative, m.identity_declared, m.ufunc_name()])
    records.store(key, {
        "ops": [[op.name, type(op).__name__, op.term, op.arity, op.domain, op.doc]
                for op in made.values()],
        "monoids": monoids}, "programs", since=mark)  # not if a proof was cut short
    return made


def _read_builtins(record: dict) -> dict:
    ops_ = {}
    for name, cls, term, arity, domain, doc in record["ops"]:
        klass = {"Op": Op, "RowScale": RowScale}[cls]
        ops_[name] = klass.stored(str(name), terms.from_json(term), arity, domain, str(doc))
    if set(ops_) != set(BINARY_NAMES + UNARY_NAMES + ("normalize",)) \
            or not isinstance(ops_["normalize"], RowScale):
        raise terms.Invalid("the stored built-ins are not the built-in ops")
    proven = {}
    for name, identity, idempotent, invertible, commutative, declared, ufunc in record["monoids"]:
        m = Monoid.stored(ops_[name], terms.from_json(identity), idempotent, invertible,
                          commutative, declared, ufunc)
        _check_monoid(m)
        proven[m.op.key] = m
    _PROVEN.update(proven)
    return ops_


def _check_monoid(m: Monoid) -> None:
    """Numeric consistency of a stored monoid with its op's formula (a cheap test, not a
    proof, as for the analysis cache): the identity and every property claimed hold at the
    screening points, and the ufunc computes the op there. ``any`` is GraphBLAS's declared
    convention (identity 0, idempotent, commutative by fiat, ufunc maximum)."""
    if m.identity_declared or m.name == "any":
        if not (m.name == "any" and m.identity_declared and m.identity_term == ("Zero",)
                and m.idempotent and not m.invertible and m.commutative
                and m.__dict__.get("_ufunc") == "maximum"):
            raise terms.Invalid("a declared identity in the stored built-ins")
        return
    xs = {"nonnegative": _SCREEN[_SCREEN >= 0], "boolean": np.array([0.0, 1.0])}.get(
        m.op.domain, _SCREEN)
    x, y = (v.ravel() for v in np.meshgrid(xs, xs))
    e = np.full_like(xs, m.identity_value)
    f = apply_binary(m.op, x, y)

    def same(a, b) -> bool:
        return bool(np.all((a == b) | (np.isnan(a) & np.isnan(b))
                           | (np.abs(a - b) <= 1e-12 * np.maximum(np.abs(b), 1.0))))

    ok = same(apply_binary(m.op, xs, e), xs) and same(apply_binary(m.op, e, xs), xs)
    ok &= not m.idempotent or same(apply_binary(m.op, xs, xs), xs)
    ok &= not m.commutative or same(apply_binary(m.op, y, x), f)
    ok &= not m.invertible or same(x + y, f)
    ufunc = m.__dict__.get("_ufunc")
    ok &= ufunc is None or same(getattr(np, ufunc)(x, y), f)
    if not ok:
        raise terms.Invalid(f"the stored monoid {m.name!r} disagrees with its op's formula")


_BUILTINS = _builtins()
plus = _BUILTINS["plus"]
minus = _BUILTINS["minus"]
times = _BUILTINS["times"]
div = _BUILTINS["div"]
min = _BUILTINS["min"]  # noqa: A001 (GraphBLAS name)
max = _BUILTINS["max"]  # noqa: A001
absdiff = _BUILTINS["absdiff"]
sqdiff = _BUILTINS["sqdiff"]
power = _BUILTINS["power"]
ne = _BUILTINS["ne"]
eq = _BUILTINS["eq"]
lor = _BUILTINS["lor"]
land = _BUILTINS["land"]
any = _BUILTINS["any"]  # noqa: A001
first = _BUILTINS["first"]
second = _BUILTINS["second"]
pair = _BUILTINS["pair"]

abs = _BUILTINS["abs"]  # noqa: A001
sqrt = _BUILTINS["sqrt"]
square = _BUILTINS["square"]
log = _BUILTINS["log"]
exp = _BUILTINS["exp"]
identity = _BUILTINS["identity"]
neg = _BUILTINS["neg"]
nonzero = _BUILTINS["nonzero"]

BUILTIN_BINARY = tuple(_BUILTINS[n] for n in BINARY_NAMES)
BUILTIN_UNARY = tuple(_BUILTINS[n] for n in UNARY_NAMES)
BY_NAME = {op.name: op for op in BUILTIN_BINARY + BUILTIN_UNARY}

normalize = _BUILTINS["normalize"]
ROW_OPS = {"normalize": normalize}
"""Built-in ops that act on whole rows (bound once per operand, not per entry)."""
