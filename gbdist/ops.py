"""Scalar operators as sympy formulas.

Every operator gbdist knows is a formula over the symbols ``x`` (and ``y``),
plus a *domain* (``real``, ``nonnegative`` or ``boolean``) that states which
inputs it accepts. Conventions such as ``0 * log 0 = 0`` or ``0 / 0 = 0`` are
written into the formula as explicit ``Piecewise`` branches, so the compiler
sees them.

Properties are derived from the formula, not declared: whether a binary op is a
monoid (and its identity), idempotent, invertible, commutative. The derivation
uses sympy and, where sympy cannot decide, a seeded numeric check (see
``proofs.py``).

Formulas are built from Python code through :class:`Sym`, a thin wrapper whose
operators build sympy trees (``x + y == 0`` builds ``Eq(x + y, 0)``, not a
Python bool). No user text is ever passed to ``sympify`` or ``eval``.
"""
from __future__ import annotations

import builtins
import functools
import inspect
from dataclasses import dataclass, field

import numpy as np
import sympy as sp

from .errors import DefinitionError, DomainError

X = sp.Symbol("x", real=True)
Y = sp.Symbol("y", real=True)

DOMAINS = ("real", "nonnegative", "boolean")


def domain_symbols(domain: str) -> tuple[sp.Symbol, sp.Symbol]:
    """The (x, y) symbols carrying the assumptions of ``domain``."""
    if domain == "nonnegative":
        return sp.Symbol("x", nonnegative=True), sp.Symbol("y", nonnegative=True)
    return X, Y


def on_domain(expr: sp.Expr, domain: str) -> sp.Expr:
    """``expr`` with x, y replaced by the symbols of ``domain``."""
    xd, yd = domain_symbols(domain)
    return expr.xreplace({X: xd, Y: yd})


def off_domain(expr: sp.Expr) -> sp.Expr:
    """Map domain symbols back to the canonical real ``X``, ``Y``."""
    mapping = {}
    for s in expr.free_symbols:
        if s.name == "x":
            mapping[s] = X
        elif s.name == "y":
            mapping[s] = Y
    return expr.xreplace(mapping)


# ---------------------------------------------------------------------------
# Building formulas from Python
# ---------------------------------------------------------------------------


def _expr(v) -> sp.Basic:
    if isinstance(v, Sym):
        return v.expr
    if isinstance(v, sp.Basic):
        return v
    if isinstance(v, (bool, np.bool_)):
        return sp.true if v else sp.false
    if isinstance(v, (int, np.integer)):
        return sp.Integer(int(v))
    if isinstance(v, (float, np.floating)):
        f = float(v)
        if f == float("inf"):
            return sp.oo
        if f == float("-inf"):
            return -sp.oo
        if f != f:
            return sp.nan
        if f == 0 and np.signbit(f):
            return build(sp.Mul, sp.Integer(-1), sp.Integer(0))  # IEEE -0.0: -1 · 0
        # Exactly the binary value the user wrote: no decimal rounding, no tolerance.
        return sp.Integer(int(f)) if f == int(f) and builtins.abs(f) < 2**53 else sp.Rational(f)
    raise DefinitionError(
        "a scalar formula can only combine numbers and the op's parameters",
        got=f"{type(v).__name__} {v!r}",
        hint="inside gb.op(...) use the x, y arguments, numbers and gb.sqrt/gb.log/gb.where ...",
    )


MAX_FORMULA_DEPTH = 200
"""Deepest nesting of a scalar formula (a where() inside a where() ... counts one per level)."""

MAX_FORMULA_SIZE = 20000
"""Most nodes in a scalar formula written out as a tree (shared helpers count each use)."""


def formula_depth(expr: sp.Basic) -> int:
    """Nesting depth of a sympy tree, computed without recursion."""
    depth = {}
    stack = [(expr, False)]
    while stack:
        node, done = stack.pop()
        if node in depth:
            continue
        if done:
            depth[node] = 1 + builtins.max((depth[a] for a in node.args), default=0)
            continue
        stack.append((node, True))
        stack.extend((a, False) for a in node.args if a not in depth)
    return depth[expr]


def formula_size(expr: sp.Basic, limit: int = MAX_FORMULA_SIZE) -> int:
    """Number of nodes of the tree written out (a shared subtree counts once per use).

    Computed over the DAG with memoisation; stops counting at ``limit + 1``.
    """
    size = {}
    stack = [(expr, False)]
    while stack:
        node, done = stack.pop()
        if node in size:
            continue
        if done:
            size[node] = builtins.min(limit + 1, 1 + sum(size[a] for a in node.args))
            continue
        stack.append((node, True))
        stack.extend((a, False) for a in node.args if a not in size)
    return size[expr]


def _too_deep(depth: int):
    return DefinitionError(
        "a scalar formula is nested too deeply",
        expected=f"at most {MAX_FORMULA_DEPTH} levels of nesting",
        got=f"{depth} levels",
        hint="write the formula with fewer nested calls (define helper ops, or flatten sums)")


def build(fn, *args):
    """Apply a sympy constructor without automatic simplification.

    sympy's automatic evaluation rewrites ``x/x`` to 1 and ``x - x`` to 0, which
    changes the IEEE value at singular points (0/0 is NaN). Formulas are kept as
    written; the analysis simplifies copies and checks every rewrite it uses
    against the written formula (see proofs.py).
    """
    try:
        with sp.evaluate(False):
            return fn(*args)
    except RecursionError:
        raise DefinitionError(
            "a scalar formula is too complex to build",
            got="sympy ran out of recursion depth on it",
            hint="split the formula into smaller ops, or nest fewer where() conditions") from None
    except (TypeError, ValueError) as e:
        raise DefinitionError("a scalar formula cannot be built", got=str(e)[:200],
                              hint="check the arguments of where(), comparisons and powers") from None


class _Printer(sp.printing.str.StrPrinter):
    """sympy's str printer, with the exact binary value of a float shown as the float."""

    def _print_Rational(self, e):
        if e.q > 64 and (e.q & (e.q - 1)) == 0:
            return repr(float(e))
        return super()._print_Rational(e)


def show(expr) -> str:
    """A formula as text for people (explain, errors): 5e-09, not 3022314549036573/2**79."""
    try:
        return _Printer().doprint(expr)
    except Exception:  # noqa: BLE001 - sympy's printers fail on some unevaluated trees
        return structural_text(expr)


def structural_text(expr) -> str:
    """A formula as ``Type(args...)`` text, built without sympy's printers (which can
    fail on unevaluated trees); deterministic, so it serves as a key too."""
    if not isinstance(expr, sp.Basic):
        return repr(expr)
    if not expr.args:
        try:
            return sp.srepr(expr)
        except Exception:  # noqa: BLE001
            return f"{type(expr).__name__}({expr!s})"
    return f"{type(expr).__name__}({', '.join(structural_text(a) for a in expr.args)})"


def _formula_key(expr) -> str:
    try:
        return sp.srepr(expr)
    except Exception:  # noqa: BLE001 - see structural_text
        return structural_text(expr)


def evaluated(expr: sp.Basic) -> sp.Basic:
    """``expr`` rebuilt with sympy's automatic evaluation (generic algebra).

    For the symbolic side of the analysis only: it may change values at
    singular points (x/x becomes 1), which the special-point checks catch.
    """
    done: dict = {}
    stack = [(expr, False)]
    while stack:
        node, ready = stack.pop()
        if node in done:
            continue
        if not node.args or isinstance(node, (sp.Symbol, sp.Number)):
            done[node] = node
            continue
        if ready:
            try:
                done[node] = node.func(*(done[a] for a in node.args))
            except Exception:  # noqa: BLE001 - sympy cannot evaluate it: keep it as written
                try:
                    done[node] = node.func(*(done[a] for a in node.args), evaluate=False)
                except Exception:  # noqa: BLE001
                    done[node] = node
            continue
        stack.append((node, True))
        stack.extend((a, False) for a in node.args if a not in done)
    return done[expr]


class Sym:
    """A scalar formula under construction; Python operators build sympy trees."""

    __slots__ = ("expr", "depth")

    def __init__(self, expr, depth: int | None = None):
        self.expr = _expr(expr)
        if depth is None:
            depth = expr.depth if isinstance(expr, Sym) else formula_depth(self.expr)
        if depth > MAX_FORMULA_DEPTH:
            raise _too_deep(depth)
        self.depth = depth

    def __repr__(self):
        return f"Sym({self.expr})"

    def __bool__(self):
        raise DefinitionError(
            "a formula has no truth value while it is being defined",
            got=f"`if`/`and`/`or` on {self.expr}",
            hint="use gb.where(cond, a, b), & and | instead of if/and/or",
        )

    __hash__ = object.__hash__

    def _bin(self, other, fn, swap=False):
        a, b = self.expr, _expr(other)
        d = 1 + builtins.max(self.depth, other.depth if isinstance(other, Sym) else formula_depth(b))
        if d > MAX_FORMULA_DEPTH:
            raise _too_deep(d)
        return Sym(build(fn, b, a) if swap else build(fn, a, b), d)

    def _chain(self, other, head, fn):
        """``self + other`` (``head`` = sp.Add) or ``self * other`` (sp.Mul), extending a
        chain built left to right into one n-ary node (its arguments in written order),
        so ``x*y + x*y + ...`` (3,000 terms) is one level deep, not 3,000."""
        a, b = self.expr, _expr(other)
        if not isinstance(a, head):
            return self._bin(other, fn)
        d = builtins.max(self.depth,
                         1 + (other.depth if isinstance(other, Sym) else formula_depth(b)))
        if d > MAX_FORMULA_DEPTH:
            raise _too_deep(d)
        return Sym(build(head, *a.args, b), d)

    def __add__(self, o): return self._chain(o, sp.Add, lambda a, b: a + b)
    def __radd__(self, o): return self._bin(o, lambda a, b: a + b, True)
    def __sub__(self, o): return self._bin(o, lambda a, b: a - b)
    def __rsub__(self, o): return self._bin(o, lambda a, b: a - b, True)
    def __mul__(self, o): return self._chain(o, sp.Mul, lambda a, b: a * b)
    def __rmul__(self, o): return self._bin(o, lambda a, b: a * b, True)
    def __truediv__(self, o): return self._bin(o, lambda a, b: a / b)
    def __rtruediv__(self, o): return self._bin(o, lambda a, b: a / b, True)
    def __pow__(self, o): return self._bin(o, lambda a, b: a ** b)
    def __rpow__(self, o): return self._bin(o, lambda a, b: a ** b, True)
    def __neg__(self): return Sym(-self.expr) if self.expr.is_Number and self.expr != 0 else _un(sp.Mul, sp.Integer(-1), self)
    def __pos__(self): return self
    def __abs__(self): return _un(sp.Abs, self)
    def __eq__(self, o): return self._bin(o, sp.Eq)
    def __ne__(self, o): return self._bin(o, sp.Ne)
    def __lt__(self, o): return self._bin(o, sp.Lt)
    def __le__(self, o): return self._bin(o, sp.Le)
    def __gt__(self, o): return self._bin(o, sp.Gt)
    def __ge__(self, o): return self._bin(o, sp.Ge)
    def __and__(self, o): return self._bin(o, sp.And)
    def __or__(self, o): return self._bin(o, sp.Or)
    def __invert__(self): return _un(sp.Not, self)


def _un(fn, *args) -> Sym:
    """``fn(*args)`` built as written, with the nesting depth checked."""
    depth = 1 + builtins.max((a.depth if isinstance(a, Sym) else formula_depth(_expr(a)) for a in args),
                    default=0)
    if depth > MAX_FORMULA_DEPTH:
        raise _too_deep(depth)
    return Sym(build(fn, *(_expr(a) for a in args)), depth)


# Scalar functions over Sym (the api module dispatches to these for scalars).

def s_sqrt(v): return _un(lambda e: sp.Pow(e, sp.Rational(1, 2)), v)
def s_log(v): return _un(sp.log, v)
def s_exp(v): return _un(sp.exp, v)
def s_abs(v): return _un(sp.Abs, v)
def s_max(a, b): return _un(sp.Max, a, b)
def s_min(a, b): return _un(sp.Min, a, b)


def s_where(cond, a, b):
    c = _expr(cond)
    if not isinstance(c, (sp.logic.boolalg.Boolean, sp.core.relational.Relational)):
        raise DefinitionError(
            "where() needs a condition as its first argument",
            got=str(c),
            hint="compare with ==, !=, <, <=, >, >=, e.g. where(x + y == 0, 0, ...)",
        )
    return _un(lambda c_, a_, b_: sp.Piecewise((a_, c_), (b_, True)), c, a, b)


# ---------------------------------------------------------------------------
# Operators
# ---------------------------------------------------------------------------


def _derive_domain(formula: sp.Expr) -> str:
    """``nonnegative`` when the formula takes a root or a log of its inputs, unless the
    argument is known to be nonnegative or the root sits in a ``where`` branch whose
    condition states it (``where(x >= 0, x^0.5, 0)`` is defined for every real x)."""
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
    try:
        return bool(evaluated(e).is_nonnegative)
    except Exception:  # noqa: BLE001 - unknown
        return False


@dataclass(frozen=True, eq=False)
class Op:
    """A scalar operator: a sympy formula over ``x`` (unary) or ``x, y`` (binary)."""

    name: str
    formula: sp.Expr
    arity: int
    domain: str = "real"
    doc: str = ""
    _key: tuple = field(default=(), repr=False, compare=False)

    def __post_init__(self):
        extra = self.formula.free_symbols - {X, Y}
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
        object.__setattr__(self, "_key", ("op", self.arity, _formula_key(self.formula), self.domain))

    @property
    def key(self) -> tuple:
        """Structural key: the formula and domain (the name is only a label)."""
        return self._key

    def __eq__(self, other):
        return isinstance(other, Op) and other.key == self.key

    def __hash__(self):
        return hash(self.key)

    def __repr__(self):
        args = "x" if self.arity == 1 else "x, y"
        return f"op {self.name}({args}) = {show(self.formula)}"

    def __call__(self, *args):
        """Substitute scalar arguments (used when composing ops in formulas)."""
        if len(args) != self.arity:
            raise DefinitionError(f"op {self.name!r} takes {self.arity} argument(s)",
                                  got=f"{len(args)} argument(s)")
        subs = {X: _expr(args[0])}
        if self.arity == 2:
            subs[Y] = _expr(args[1])
        return Sym(build(self.formula.xreplace, subs))

    def at(self, x=None, y=None) -> sp.Expr:
        """The formula with x and/or y fixed to sympy values."""
        subs = {}
        if x is not None:
            subs[X] = _expr(x)
        if y is not None:
            subs[Y] = _expr(y)
        return self.formula.subs(subs)

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
    if callable(formula) and not isinstance(formula, (Sym, sp.Basic)):
        try:
            params = inspect.signature(formula).parameters
        except (TypeError, ValueError):
            raise DefinitionError(f"op {name!r}: cannot read the formula's parameters") from None
        arity = len(params)
        if arity not in (1, 2):
            raise DefinitionError(f"op {name!r} must take one or two arguments",
                                  got=f"{arity} parameter(s)")
        result = formula(*(Sym(s) for s in (X, Y)[:arity]))
        expr = _expr(result)
    else:
        expr = _expr(formula)
        arity = 2 if Y in expr.free_symbols else 1
    if isinstance(expr, (sp.logic.boolalg.BooleanFunction, sp.core.relational.Relational)):
        expr = sp.Piecewise((1, expr), (0, True))
    return Op(name, expr, arity, domain or _derive_domain(expr), doc)


# ---------------------------------------------------------------------------
# Numeric evaluation of formulas (the CPU backend's scalar engine)
# ---------------------------------------------------------------------------


def _ev_piecewise(e, env):
    out = None
    taken = None
    shape = _shape(env)
    for expr, cond in e.args:
        c = np.broadcast_to(evaluate(cond, env), shape).astype(bool)
        v = np.broadcast_to(evaluate(expr, env), shape)
        if out is None:
            out = np.array(v, dtype=_dtype(env), copy=True)
            taken = c.copy()
        else:
            sel = c & ~taken
            out[sel] = v[sel]
            taken |= c
    out[~taken] = np.nan
    return out


def _shape(env):
    for k, v in env.items():
        if k != "__dtype__":
            return np.shape(v)
    return ()


def _dtype(env):
    return env.get("__dtype__", np.float64)


def _ev_pow(e, env):
    base = evaluate(e.base, env)
    ex = e.exp
    if ex == sp.Rational(1, 2):
        return np.sqrt(base)
    if ex == 2:
        return base * base
    if ex == -1:
        return 1 / base
    if ex.is_number and ex.is_negative and not ex.has(sp.oo, -sp.oo, sp.zoo, sp.nan):
        # x^-p as 1 / x^p: one rounding less, and 1/x^p of a subnormal stays finite
        return 1 / _pos_pow(base, -ex, env)
    return np.power(base, evaluate(ex, env))


def _pos_pow(base, ex, env):
    if ex == 1:
        return base
    if ex == sp.Rational(1, 2):
        return np.sqrt(base)
    if ex == 2:
        return base * base
    return np.power(base, evaluate(ex, env))


def _ev_mul(e, env):
    """A product with its divisions done as written: (a·b) / (c·d), never a·b·c⁻¹·d⁻¹.

    ``x * y**-1`` computed as a multiplication by 1/y overflows for a subnormal y
    (1/1e-310 = inf) where x / y is finite.
    """
    num, den = [], []
    for a in e.args:
        if (isinstance(a, sp.Pow) and a.exp.is_number and a.exp.is_negative
                and not a.exp.has(sp.oo, -sp.oo, sp.zoo, sp.nan)):
            den.append(_pos_pow(evaluate(a.base, env), -a.exp, env))
        else:
            num.append(evaluate(a, env))
    out = functools.reduce(np.multiply, num) if num else _dtype(env)(1)
    if den:
        out = out / functools.reduce(np.multiply, den)
    return out


def _ev_ite(e, env):
    c, a, b = (evaluate(t, env) for t in e.args)
    return np.where(np.asarray(c, dtype=bool), a, b)


def _ev_xor(e, env):
    return functools.reduce(np.logical_xor, (evaluate(a, env) for a in e.args))


_EVAL = {
    sp.Add: lambda e, env: functools.reduce(np.add, (evaluate(a, env) for a in e.args)),
    sp.Mul: _ev_mul,
    sp.Pow: _ev_pow,
    sp.Abs: lambda e, env: np.abs(evaluate(e.args[0], env)),
    sp.exp: lambda e, env: np.exp(evaluate(e.args[0], env)),
    sp.log: lambda e, env: np.log(evaluate(e.args[0], env)),
    sp.sign: lambda e, env: np.sign(evaluate(e.args[0], env)),
    sp.Max: lambda e, env: functools.reduce(np.maximum, (evaluate(a, env) for a in e.args)),
    sp.Min: lambda e, env: functools.reduce(np.minimum, (evaluate(a, env) for a in e.args)),
    sp.Piecewise: _ev_piecewise,
    sp.ITE: _ev_ite,
    sp.Eq: lambda e, env: evaluate(e.lhs, env) == evaluate(e.rhs, env),
    sp.Ne: lambda e, env: evaluate(e.lhs, env) != evaluate(e.rhs, env),
    sp.StrictLessThan: lambda e, env: evaluate(e.lhs, env) < evaluate(e.rhs, env),
    sp.LessThan: lambda e, env: evaluate(e.lhs, env) <= evaluate(e.rhs, env),
    sp.StrictGreaterThan: lambda e, env: evaluate(e.lhs, env) > evaluate(e.rhs, env),
    sp.GreaterThan: lambda e, env: evaluate(e.lhs, env) >= evaluate(e.rhs, env),
    sp.And: lambda e, env: functools.reduce(np.logical_and, (evaluate(a, env) for a in e.args)),
    sp.Or: lambda e, env: functools.reduce(np.logical_or, (evaluate(a, env) for a in e.args)),
    sp.Xor: _ev_xor,
    sp.Not: lambda e, env: np.logical_not(evaluate(e.args[0], env)),
}

EVALUABLE = tuple(_EVAL)
"""The sympy node types the evaluator (and the CUDA printer) accept."""


def _constant(expr, dt):
    if expr is sp.nan or expr is sp.zoo:
        # zoo is sympy's unsigned (complex) infinity, e.g. simplify(log(0)): no real
        # value, so NaN. Formulas as written are substituted without evaluation and
        # keep IEEE's signed infinities (log(0) = -inf); a simplified copy holding
        # zoo disagrees with them and is never used.
        return dt(np.nan)
    if expr is sp.oo:
        return dt(np.inf)
    if expr is -sp.oo:
        return dt(-np.inf)
    if expr.is_Rational and dt is not np.float64:
        return dt(int(expr.p)) / dt(int(expr.q))
    return dt(float(expr))


def evaluate(expr: sp.Basic, env: dict) -> np.ndarray:
    """Evaluate a sympy formula on NumPy arrays by walking its tree (IEEE semantics).

    ``env`` maps symbols (by name: 'x', 'y') to arrays, and optionally
    ``"__dtype__"`` to the floating type of constants (float64 by default; the
    proofs also evaluate in long double). Only the node types in the table
    above are accepted; anything else raises instead of guessing. Divisions are
    computed as written (x / y), not as x · y⁻¹.
    """
    if expr.is_Symbol:
        return env[expr.name]
    if expr is sp.true:
        return np.True_
    if expr is sp.false:
        return np.False_
    if expr.is_Number or expr.is_NumberSymbol or expr in (sp.oo, -sp.oo, sp.zoo, sp.nan):
        return _constant(expr, _dtype(env))
    for cls in type(expr).__mro__:
        fn = _EVAL.get(cls)
        if fn is not None:
            with np.errstate(all="ignore"):
                return fn(expr, env)
    raise DefinitionError("the CPU backend cannot evaluate this formula node",
                          got=f"{type(expr).__name__}: {expr}")


def evaluable(expr: sp.Basic) -> bool:
    """True when every node of ``expr`` is one the evaluator accepts."""
    for node in sp.preorder_traversal(expr):
        if node.is_Symbol or node in (sp.true, sp.false, sp.oo, -sp.oo, sp.nan):
            continue
        if node.is_Number or node.is_NumberSymbol:
            continue
        if isinstance(node, (sp.core.containers.Tuple, sp.functions.elementary.piecewise.ExprCondPair)):
            continue
        if not isinstance(node, EVALUABLE):
            return False
    return True


def apply_unary(op: Op, values: np.ndarray) -> np.ndarray:
    with np.errstate(all="ignore"):
        out = evaluate(op.formula, {"x": values})
    return np.broadcast_to(np.asarray(out, dtype=np.float64), np.shape(values))


def apply_binary(op: Op, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    a, b = np.broadcast_arrays(a, b)
    with np.errstate(all="ignore"):
        out = evaluate(op.formula, {"x": a, "y": b})
    return np.broadcast_to(np.asarray(out, dtype=np.float64), a.shape)


def constant_value(expr: sp.Basic) -> float:
    """A closed sympy expression as a float (IEEE semantics; zoo is NaN)."""
    return float(evaluate(sp.sympify(expr) if not isinstance(expr, sp.Basic) else expr, {}))


# ---------------------------------------------------------------------------
# Monoids: binary ops whose identity and flags are derived from the formula
# ---------------------------------------------------------------------------

_IDENTITY_CANDIDATES = (sp.Integer(0), sp.Integer(1), sp.oo, -sp.oo)


@dataclass(frozen=True, eq=False)
class Monoid:
    """A binary op with an identity: the ⊕ of a semiring, or a row reduction."""

    op: Op
    identity: sp.Expr
    idempotent: bool
    invertible: bool
    commutative: bool
    identity_declared: bool = False

    @property
    def name(self) -> str:
        return self.op.name

    @property
    def key(self) -> tuple:
        return ("monoid", self.op.key, sp.srepr(self.identity))

    def __eq__(self, other):
        return isinstance(other, Monoid) and other.key == self.key

    def __hash__(self):
        return hash(self.key)

    def __repr__(self):
        flags = [n for n, v in (("idempotent", self.idempotent), ("invertible", self.invertible),
                                ("commutative", self.commutative)) if v]
        return f"monoid {self.name} (identity {self.identity}; {', '.join(flags) or 'no flags'})"

    @property
    def identity_value(self) -> float:
        return constant_value(self.identity)

    @property
    def ufunc(self):
        """The NumPy ufunc that implements this monoid on the CPU backend."""
        return _monoid_ufunc(self.op)


_UFUNCS = [
    (X + Y, np.add),
    (X * Y, np.multiply),
    (sp.Max(X, Y), np.maximum),
    (sp.Min(X, Y), np.minimum),
]


def _monoid_ufunc(op: Op):
    from .proofs import equivalent  # local: proofs depends on this module

    for formula, ufunc in _UFUNCS:
        if equivalent(op.formula, formula, op.domain):
            return ufunc
    if op.domain == "boolean" or op.name == "any":
        return np.maximum if op.name in ("lor", "any") else np.minimum
    raise DefinitionError(
        f"monoid {op.name!r} has no NumPy implementation on the CPU backend",
        got=show(op.formula), hint="use plus, times, min, max, lor, land or any",
    )


@functools.lru_cache(maxsize=None)
def as_monoid(op: Op) -> Monoid:
    """Derive the monoid structure of a binary op, or raise if it has none."""
    from .proofs import equivalent

    if isinstance(op, Monoid):
        return op
    if not isinstance(op, Op) or op.arity != 2:
        raise DefinitionError("a monoid needs a binary op", got=repr(op))
    if op.name == "any":
        # `any` returns either argument: it has no two-sided identity to derive.
        # GraphBLAS's convention (an empty reduction is 0) is declared here.
        return Monoid(op, sp.Integer(0), True, False, True, identity_declared=True)
    # Associativity is not checked: it needs a third symbol and sympy often
    # cannot decide it for Piecewise formulas. An identity is required.
    identity = None
    candidates = (sp.Integer(0), sp.Integer(1)) if op.domain == "boolean" else _IDENTITY_CANDIDATES
    for e in candidates:
        if equivalent(op.at(y=e), X, op.domain) and equivalent(op.at(x=e).xreplace({Y: X}), X, op.domain):
            identity = e
            break
    if identity is None:
        raise DefinitionError(
            f"op {op.name!r} is not a monoid: no identity e with f(x, e) = f(e, x) = x was found",
            got=repr(op), hint="use plus, times, min, max, lor, land or any as ⊕",
        )
    idempotent = equivalent(op.formula.xreplace({Y: X}), X, op.domain)
    invertible = op.domain != "boolean" and equivalent(op.formula, X + Y, op.domain)
    commutative = equivalent(op.formula, op.formula.xreplace({X: Y, Y: X}), op.domain)
    return Monoid(op, identity, idempotent, invertible, commutative)


# ---------------------------------------------------------------------------
# Built-in operators
# ---------------------------------------------------------------------------

_x, _y = Sym(X), Sym(Y)


def _where(c, a, b):
    return s_where(c, a, b)


plus = make_op("plus", _x + _y, doc="x + y")
minus = make_op("minus", _x - _y, doc="x - y")
times = make_op("times", _x * _y, doc="x * y")
div = make_op("div", _x / _y, doc="x / y")
min = make_op("min", s_min(_x, _y), doc="min(x, y)")  # noqa: A001 (GraphBLAS name)
max = make_op("max", s_max(_x, _y), doc="max(x, y)")  # noqa: A001
absdiff = make_op("absdiff", abs(_x - _y), doc="|x - y|")
sqdiff = make_op("sqdiff", (_x - _y) ** 2, doc="(x - y)^2")
power = make_op("power", _x ** _y, doc="x ^ y")
ne = make_op("ne", _where(_x != _y, 1, 0), doc="1 where x != y, else 0")
eq = make_op("eq", _where(_x == _y, 1, 0), doc="1 where x == y, else 0")
lor = make_op("lor", _where((_x != 0) | (_y != 0), 1, 0), domain="boolean", doc="x or y")
land = make_op("land", _where((_x != 0) & (_y != 0), 1, 0), domain="boolean", doc="x and y")
any = make_op("any", lambda x, y: x, doc="either argument (GraphBLAS ANY)")  # noqa: A001
first = make_op("first", lambda x, y: x, doc="x")
second = make_op("second", lambda x, y: y, doc="y")
pair = Op("pair", sp.Integer(1), 2, "real", "1 (GraphBLAS PAIR / ONEB)")

abs = make_op("abs", s_abs(_x), doc="|x|")  # noqa: A001
sqrt = make_op("sqrt", s_sqrt(_x), doc="sqrt(x), x >= 0")
square = make_op("square", _x ** 2, doc="x^2")
log = make_op("log", s_log(_x), doc="natural log, x >= 0")
exp = make_op("exp", s_exp(_x), doc="e^x")
identity = make_op("identity", _x, doc="x")
neg = make_op("neg", -_x, doc="-x")
nonzero = make_op("nonzero", _where(_x != 0, 1, 0), doc="1 where the stored value is nonzero")


def pow(p) -> Op:  # noqa: A001 (the issue names it pow(p))
    """Unary ``x ^ p`` for a number ``p`` (e.g. ``gb.apply(ops.pow(3), A)``)."""
    return make_op(f"pow{p:g}", _x ** p, doc=f"x ^ {p:g}")


def absdiff_pow(p) -> Op:
    """Binary ``|x - y| ^ p``: Minkowski's ⊗."""
    return make_op(f"absdiff_pow{p:g}", abs(_x - _y) ** p, doc=f"|x - y| ^ {p:g}")


BUILTIN_BINARY = (plus, minus, times, div, min, max, absdiff, sqdiff, power, ne, eq,
                  lor, land, any, first, second, pair)
BUILTIN_UNARY = (abs, sqrt, square, log, exp, identity, neg, nonzero)
BY_NAME = {op.name: op for op in BUILTIN_BINARY + BUILTIN_UNARY}
