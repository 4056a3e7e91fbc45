"""Terms (gbdist.algebra.terms): a formula as plain data is evaluated, keyed and rebuilt
exactly as the sympy formula it was written from, so an op read back from a stored record
computes what the op built by sympy computes (docs/cpu.md, "Start-up")."""
from __future__ import annotations

import json

import numpy as np
import pytest
import sympy as sp

import gbdist as gb
from gbdist import names
from gbdist.algebra import formulas, terms
from gbdist.algebra.evaluate import evaluate
from gbdist.algebra.formulas import X, Y
from gbdist.algebra.ops import Monoid, Op, _define_builtins, make_op
from gbdist.compiler import ir

POINTS = np.array([0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.0, -2.0, 3.75, -3.75, 1e-310, -1e-310,
                   1e-3, 7.0, 1e300, -1e300, np.inf, -np.inf, np.nan])


def _plan_formulas() -> dict:
    """label -> formula: every op of every built-in metric's plan (⊗, the rewrite's g, L, R,
    the expansions' φ and ψ, the float splits' f and h, the apply chains, the monoids)."""
    from gbdist.front import library
    from gbdist.pairwise import metric_program
    out = {}
    for m in gb.metric_names():
        if not library.is_builtin(names.get_metric(m)):
            continue  # a metric another test defined
        cases = [{}] if m != "minkowski" else [{}, {"p": 1}, {"p": 3}, {"p": 5.8}, {"p": 0.5}]
        for params in cases:
            plan = metric_program(m, **params).plan
            for node in ir.walk(plan.lowered):
                for v in vars(node).values():
                    for x in (v if isinstance(v, tuple) else (v,)):
                        for o in (x if isinstance(x, tuple) else (x,)):
                            op = o.op if isinstance(o, Monoid) else o
                            if isinstance(op, Op):
                                out.setdefault(f"{m}{params} {op.name}", op.formula)
    return out


HANDWRITTEN = {  # the evaluator's special cases: powers, divisions, conditions
    "x^(1/2)": X ** sp.Rational(1, 2),
    "x^(-1/2)": X ** sp.Rational(-1, 2),
    "x^-1": X ** -1,
    "x^-2": X ** -2,
    "x^2": X ** 2,
    "x^1": sp.Pow(X, 1, evaluate=False),
    "x^0.5 (float)": X ** sp.Float(0.5),
    "x^-0.5 (float)": X ** sp.Float(-0.5),
    "x^-(1/2) unevaluated": sp.Pow(X, sp.Mul(-1, sp.Rational(1, 2), evaluate=False), evaluate=False),
    "x^(1/2 + 1/2) unevaluated": sp.Pow(X, sp.Add(sp.Rational(1, 2), sp.Rational(1, 2),
                                                  evaluate=False), evaluate=False),
    "x^-sqrt(2)": X ** -sp.sqrt(2),
    "x^5.8": X ** sp.Rational(5.8),
    "x / y": sp.Mul(X, sp.Pow(Y, -1, evaluate=False), evaluate=False),
    "x / y^2 / 3": sp.Mul(X, sp.Pow(Y, -2, evaluate=False), sp.Rational(1, 3), evaluate=False),
    "x y^-(1/2)": sp.Mul(X, sp.Pow(Y, sp.Rational(-1, 2), evaluate=False), evaluate=False),
    "1/y only": sp.Mul(sp.Pow(Y, -1, evaluate=False), evaluate=False),
    "log, exp, sign": sp.log(X) + sp.exp(Y) - sp.sign(X - Y),
    "max, min": sp.Max(X, Y, -1) - sp.Min(X, 0),
    "piecewise": sp.Piecewise((0, sp.Eq(X, 0)), (X * sp.log(X / Y), sp.Lt(Y, 1)),
                              (sp.oo, sp.And(sp.Ne(X, Y), sp.Not(sp.Ge(Y, 2))))),
    "piecewise or": sp.Piecewise((1, sp.Or(sp.Gt(X, 0), sp.Le(Y, -1))), (0, True)),
    "xor, ite": sp.Piecewise((sp.ITE(sp.Gt(X, 0), X, Y), sp.Xor(sp.Gt(X, 0), sp.Gt(Y, 0))),
                             (2, True)),
    "constants": sp.pi * X + sp.E - sp.zoo * 0 + sp.Rational(3, 7) * Y,
    "nan": sp.nan + X,
}


@pytest.fixture(scope="module")
def all_formulas():
    return {**_plan_formulas(), **HANDWRITTEN}


def _bitwise(a, b) -> bool:
    a, b = np.broadcast_arrays(np.asarray(a), np.asarray(b))
    same = (a == b) | (np.isnan(a) & np.isnan(b))
    zeros = (a == 0) & (b == 0)
    return bool(np.all(same) and np.array_equal(np.signbit(a[zeros]), np.signbit(b[zeros])))


def test_a_term_evaluates_as_its_formula_node_for_node(all_formulas):
    x, y = (v.ravel() for v in np.meshgrid(POINTS, POINTS))
    for label, f in all_formulas.items():
        t = terms.encode(f)
        for dt in (np.float64, np.longdouble):
            env = {"x": x.astype(dt), "y": y.astype(dt), "__dtype__": dt,
                   # column operands (w[col], gbdist.algebra.columns): positive values
                   **{s.name: (1 + np.abs(x)).astype(dt) for s in f.free_symbols
                      if s.name not in ("x", "y")}}
            with np.errstate(all="ignore"):
                want = evaluate(f, env)
                got = terms.evaluate(t, env)
            assert _bitwise(np.asarray(got, dtype=dt), np.asarray(want, dtype=dt)), (label, dt)


def test_a_term_rebuilds_its_formula_as_written(all_formulas):
    for label, f in all_formulas.items():
        t = terms.encode(f)
        assert terms.from_json(json.loads(json.dumps(t))) == t, label
        assert sp.srepr(terms.decode(t)) == sp.srepr(f), label


def test_terms_refuse_what_they_cannot_represent_exactly():
    for f in (sp.gamma(X), sp.Symbol("x"), sp.Symbol("p", positive=True) * X,
              sp.Float("0.1", 30) * X, sp.Integer(10) ** 200 * X + 1 / sp.Integer(10) ** 200):
        with pytest.raises(terms.Unsupported):
            terms.encode(f)


@pytest.mark.parametrize("bad", [
    [], ["Gamma", ["Symbol", "x", False]], ["Symbol", "os.system", False], ["Symbol", "x", 1],
    ["Integer", "007"], ["Integer", "1" * 200], ["Rational", "2", "4"], ["Rational", "1", "1"],
    ["Float", "0.10000000000000001"], ["Float", "1e999"], ["Pow", ["Symbol", "x", False]],
    ["Piecewise"], ["Piecewise", [["One"]]], ["Add"], ["One", ["One"]], "x", None,
    ["Add"] + [["One"]] * 300,
])
def test_malformed_stored_terms_are_refused(bad):
    with pytest.raises(terms.Invalid):
        terms.from_json(bad)


def test_a_huge_exponent_of_a_number_is_refused_but_a_float_exponent_is_not():
    two = ["Integer", "2"]
    with pytest.raises(terms.Invalid):
        terms.decode(terms.from_json(["Pow", two, ["Integer", "1" + "0" * 40]]))
    with pytest.raises(terms.Invalid):
        terms.decode(terms.from_json(["Pow", two, ["Rational", "1", "1" + "0" * 99]]))
    p = sp.Rational(5.8)  # the exact value of the float 5.8: a denominator of 2**50
    t = terms.encode(sp.Pow(sp.Abs(sp.Integer(0)), p, evaluate=False))
    assert terms.decode(terms.from_json(json.loads(json.dumps(t)))).args[1] == p


def test_guarded_bases_read_from_the_term_are_those_of_the_formula(all_formulas):
    cases = {**all_formulas, "root": sp.sqrt(X - 1) + sp.log(Y),
             "guarded": sp.Piecewise((sp.sqrt(X), sp.Ge(X, 0)), (0, True)) + Y ** sp.Float(1.5)}
    for label, f in cases.items():
        want = formulas.guarded_bases(f)
        got = terms.guarded_bases(terms.encode(f))
        assert [(k, v) for k, _, v in got] == [(k, v) for k, _, v in want], label
        assert [sp.srepr(terms.decode(b)) for _, b, _ in got] == [sp.srepr(b) for _, b, _ in want]


def test_stored_ops_are_the_ops_sympy_builds():
    built = _define_builtins()  # what a process without the stored record makes
    for name, op in built.items():
        stored = gb.ops.BY_NAME.get(name) or gb.ops.ROW_OPS[name]
        assert stored.key == op.key and stored.term == op.term and stored == op, name
        assert (stored.name, stored.arity, stored.domain, stored.doc, type(stored)) == \
            (op.name, op.arity, op.domain, op.doc, type(op))
        assert sp.srepr(stored.formula) == sp.srepr(op.formula), name
    user = make_op("my_plus", lambda x, y: x + y)
    assert user == gb.ops.plus and user.key == gb.ops.plus.key
    stored = Op.stored("s", user.term, 2, "real")
    assert stored == user and "formula" not in stored.__dict__
    assert sp.srepr(stored.formula) == sp.srepr(user.formula)  # rebuilt when read


def test_builtin_monoids_and_semirings_are_the_ones_sympy_proves():
    from gbdist.algebra.monoids import _as_monoid
    o = gb.ops
    for op in (o.plus, o.times, o.min, o.max, o.lor, o.land, o.any):
        proved = _as_monoid(op)  # the proofs, run now
        stored = gb.ops.as_monoid(op)
        assert (stored.key, stored.idempotent, stored.invertible, stored.commutative,
                stored.identity_declared) == (proved.key, proved.idempotent, proved.invertible,
                                              proved.commutative, proved.identity_declared)
        assert stored.identity == proved.identity and stored.ufunc is proved.ufunc
    for name, (mul, add, ann) in {
            "plus_pair": (o.pair, o.plus, 0), "min_plus": (o.plus, o.min, sp.oo),
            "max_plus": (o.plus, o.max, -sp.oo), "any_pair": (o.pair, o.any, 0),
            "plus_times": (o.times, o.plus, gb.UNSET)}.items():
        sr = gb.semiring(mul, add, annihilator=ann, name=name)
        assert gb.semirings[name] == sr and gb.semirings[name].key == sr.key
        assert gb.semirings[name].structural == sr.structural
        assert gb.semirings[name].annihilator == sr.annihilator
    assert names.lookup("min_plus") is gb.semirings.min_plus
