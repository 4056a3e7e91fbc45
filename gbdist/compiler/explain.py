"""Explanations: what the compiler decided, why, the proofs and the plan.

``gb.explain("manhattan")`` returns an :class:`Explanation`, a structured
record holding sympy expressions (not strings): for each product the formula
f, the values L = f(x, zb), R = f(za, y), C = f(za, zb), the strategy and why,
the rewrite g and its expansion, and each proof labelled by what it
establishes; then the plan's steps and epilogue.

It renders four ways: ``str`` (Unicode text for a terminal), ``_repr_latex_``
and ``_repr_html_`` (notebooks), ``to_markdown()`` (docs); ``figure()`` draws
the decision and the plan (matplotlib, optional: see ``explain_figures``).
Formulas are tidied for reading by ``explain_math`` (|x| for Max(0,x) − Min(0,x)
where checked, exact constants such as √2, conventions as cases).
"""
from __future__ import annotations

import dataclasses
import html as _html
from dataclasses import dataclass

import sympy as sp

from . import ir
from .columns import explain_lines
from . import pruning
from .explain_math import STEP_SHAPE, Leaves, latex, symbolic, text, tidy
from .plan import Plan, ProductDecision

from .explain_proofs import (  # noqa: F401 (re-exported)
    EXHAUSTIVE, EXPECTED, FAILED, NUMERIC, PROVED, ProofExplanation, _md_escape, simpler)


@dataclass(frozen=True)
class ProductExplanation:
    """One product: its strategy, expansion and the reasoning behind them."""

    expression: str
    semiring: str
    strategy: str
    expansion_rank: int | None
    f: sp.Expr
    L: sp.Expr
    R: sp.Expr
    C: sp.Expr
    g: sp.Expr
    fills: tuple  # (za, zb): sympy values, or the text "absent" (structural semantics)
    identity: sp.Expr
    expansion: tuple  # ((φ_r(x), ψ_r(y)), ...)
    reason: str
    override: str
    structural: bool
    clamped: bool
    domain: str
    proofs: tuple[ProofExplanation, ...]
    semiring_add: str = "plus"  # the name of ⊕
    left_ops: tuple = ()  # the apply() chain of each operand, as formulas in x (Jaccard's nonzero)
    right_ops: tuple = ()
    f_simple: sp.Expr | None = None  # f simplified, when shorter and proven equal (simpler)

    @classmethod
    def from_decision(cls, d: ProductDecision) -> "ProductExplanation":
        a = d.analysis
        dom = a.semiring.mul.domain
        fills = ("absent", "absent") if a.structural else (a.fill_left, a.fill_right)
        note = ("the declared annihilator overrides this (see OVERRIDE)" if a.override else
                 "this side does not vanish, which is why the union is needed")
        proofs = tuple(ProofExplanation.of(p, a.strategy != "intersection" or bool(a.override), note)
                       for p in a.proofs)
        exp = tuple((tidy(p, dom), tidy(q, dom)) for p, q in (a.expansion or ()))
        made = cls(ir.to_text(d.node), _semiring_text(a.semiring), a.strategy, a.expansion_rank,
                   tidy(a.semiring.mul.formula, dom), tidy(a.L, dom), tidy(a.R, dom),
                   tidy(a.C, dom), tidy(a.g, dom), fills, a.identity, exp, a.reason, a.override,
                   a.structural, a.nonnegative and a.strategy == "union-correction", dom, proofs,
                   a.semiring.add.name, *_chains(d.node))
        # one source: ``.reason`` is the printed "why" (formulas as mathematics), so the
        # object and every rendering say the same thing
        return dataclasses.replace(made, reason=made.why(), f_simple=simpler(made.f, dom))

    # -- the pieces every rendering shows ------------------------------------

    def fill_names(self) -> tuple[str, str]:
        return tuple("absent" if z == "absent" else text(z) for z in self.fills)

    def why(self) -> str:
        """The reason for the strategy, with the formulas printed as mathematics."""
        za, zb = self.fill_names()
        e = text(self.identity)
        if self.structural:
            return (f"annihilator declared: structural semantics; absent entries take no part "
                    f"and a pair with no shared entry holds the identity {e}")
        if self.strategy == "intersection":
            return (f"f(x, {zb}) = {text(self.L)} and f({za}, y) = {text(self.R)} are the "
                    f"identity {e} of ⊕: columns stored on one side only contribute nothing")
        tail = self.reason.split("; ", 1)[1] if "; " in self.reason else ""
        if self.strategy == "union-correction":
            tail = ("⊕ = plus is invertible, so the union is one intersection pass over g "
                    "plus row reductions of L − C and R − C"
                    + (f" and k·C = k·{text(self.C)}" if self.C != 0 else ""))
        sides = [(f"f(x, {zb}) = {text(self.L)}", self._vanishes(self.L, "A's")),
                 (f"f({za}, y) = {text(self.R)}", self._vanishes(self.R, "B's"))]
        failing = [side for side, ok in sides if not ok]
        if failing:  # only the side(s) that really do not vanish
            verb = "is" if len(failing) == 1 else "are"
            head = f"{' and '.join(failing)} {verb} not the identity {e} of ⊕"
        else:  # both vanish: the declaration is what forbids the shortcut
            head = (f"{sides[0][0]} and {sides[1][0]} are the identity {e} of ⊕, but "
                    "annihilator=None forbids the intersection shortcut")
        return f"{head}; {tail}" if tail else head

    def _vanishes(self, side, whose: str) -> bool:
        """Whether f at the other side's fill is ⊕'s identity: the analysis's own verdict
        (its "… entries without a partner vanish" check), else exact equality."""
        for q in self.proofs:
            if "vanish" in q.claim and q.claim.split(": ", 1)[-1].startswith(whose):
                return q.holds
        return bool(side == self.identity)

    def rows(self) -> list[tuple[str, list]]:
        """(label, pieces) rows; a piece is text or a sympy formula to typeset."""
        za, zb = self.fill_names()
        rows: list[tuple[str, list]] = [
            ("semiring", [self.semiring]),
            ("⊗", ["f(x, y) = ", self.f] + ([" = ", self.f_simple] if self.f_simple is not None
                                            else [])),
            ("at the fills", [f"L(x) = f(x, {zb}) = ", self.L, f",   R(y) = f({za}, y) = ", self.R,
                              f",   C = f({za}, {zb}) = ", self.C]),
            ("strategy", [self.strategy]),
            ("why", [self.why()]),
        ]
        if self.override:
            rows.append(("OVERRIDE", [f"the declared annihilator is used although L or R is not "
                                      f"the identity {text(self.identity)}: only entries stored "
                                      "in both operands take part"]))
        if self.strategy == "union-correction":
            rows.append(("rewrite", ["Σ_(A∪B) f = Σ_(A∩B) g + Σ_A (L − C) + Σ_B (R − C) + k·C,"
                                     "  g(x, y) = f − L − R + C = ", self.g]))
            if self.clamped:
                rows.append(("clamp", ["f ≥ 0 is proven, so the rewritten sum is clamped at 0"]))
        if self.expansion:
            pieces: list = [f"rank {self.expansion_rank}: g(x, y) = "]
            pieces.append(_expansion_formula(self.expansion))
            pieces.append(" → stacked dot products")
            rows.append(("expansion", pieces))
        elif self.strategy != "two-pass-union":
            rows.append(("expansion", ["none (g does not split into x-only times y-only terms)"]))
        else:
            rows.append(("expansion", ["n/a"]))
        return rows

    def __str__(self) -> str:
        lines = [f"product {self.expression}"]
        for label, pieces in self.rows():
            lines.append(f"  {label:<12} {_join_text(pieces)}")
        lines.append("  proofs")
        lines.extend(f"    - {p}" for p in self.proofs)
        return "\n".join(lines)

    def markdown(self) -> str:
        out = [f"### product `{self.expression}`", "", "| | |", "| --- | --- |"]
        for label, pieces in self.rows():
            out.append(f"| {label} | {_join_markdown(pieces)} |")
        out += ["", "**proofs**", ""]
        out += [f"- {p.markdown()}" for p in self.proofs]
        return "\n".join(out)

    def latex(self) -> str:
        out = [r"\textbf{product } \texttt{" + _tex_escape(self.expression) + "}"]
        for label, pieces in self.rows():
            out.append(r"\quad \text{" + _tex_escape(label) + r":}\ " + _join_latex(pieces))
        return r" \\ ".join(out)


def _exact_text(node: ir.Node) -> str:
    """``ir.to_text`` with each constant that has an exact closed form written exactly
    (``sqrt(2)``, not ``1.41421``)."""
    from .explain_math import exact_constant
    out = ir.to_text(node)
    for c in {n.value for n in ir.walk(node) if isinstance(n, ir.Const)}:
        exact = exact_constant(c)
        if not isinstance(exact, (sp.Float, sp.Integer)):
            shown = str(exact)
            grouped = exact.is_Rational or exact.is_Add or exact.is_Mul
            out = out.replace(f"{c:g}", f"({shown})" if grouped else shown)
    return out


def _chains(node) -> tuple[tuple, tuple]:
    """The formulas of the apply() chains on a product's two operands."""
    from .typecheck import row_operand
    left, right = (node.left, node.right) if isinstance(node, ir.MxM) else (node.matrix, node.vector)
    try:
        return (tuple(op.formula for op in row_operand(left)[2]),
                tuple(op.formula for op in row_operand(right, isinstance(node, ir.MxM))[2]))
    except Exception:  # noqa: BLE001 - a picture without the transforms is still right about visits
        return (), ()


def _expansion_formula(pairs) -> sp.Expr:
    """Σ φ_r(x)·ψ_r(y) as written (each product kept as a product)."""
    terms = [sp.Mul(p, q, evaluate=False) for p, q in pairs]
    return terms[0] if len(terms) == 1 else sp.Add(*terms, evaluate=False)


def _semiring_text(sr) -> str:
    ann = sr.annihilator
    from ..algebra.semirings import UNSET
    extra = "" if ann is UNSET else ", annihilator: none (intersection forbidden)" if ann is None \
        else f", annihilator {text(sp.sympify(ann))} (structural semantics)"
    label = f"{sr.name}: " if sr.name else ""
    return f"{label}⊗ = {sr.mul.name}, ⊕ = {sr.add.name} (identity {text(sr.add.identity)}){extra}"


def _join_text(pieces) -> str:
    return "".join(p if isinstance(p, str) else text(p) for p in pieces)


def _join_markdown(pieces) -> str:
    return "".join(_md_escape(p) if isinstance(p, str) else f"${latex(p)}$" for p in pieces)


def _join_latex(pieces) -> str:
    return " ".join(r"\text{" + _tex_escape(p) + "}" if isinstance(p, str) else latex(p)
                    for p in pieces)


def _tex_escape(s: str) -> str:
    for a, b in (("\\", r"\backslash "), ("_", r"\_"), ("{", r"\{"), ("}", r"\}"), ("#", r"\#"),
                 ("%", r"\%"), ("&", r"\&"), ("$", r"\$"), ("^", r"\^{}")):
        s = s.replace(a, b)
    return s


@dataclass(frozen=True)
class Explanation:
    """The decisions for an expression: products, proofs and the plan."""

    title: str
    expression: str
    products: list
    proofs: list  # ProofExplanation, every product's in order
    steps: list  # (name, text, kind)
    epilogue: str
    plan: Plan
    cuda: str | None = None
    formula: sp.Expr | None = None  # the expression over named leaves (P1, S1, k)
    legend: tuple = ()  # ((symbol, text of the node), ...)
    result: sp.Expr | None = None  # the epilogue over the steps t0, t1, ...
    definition: str = ""  # the metric's text definition, as written (its let names kept)
    conditioning: str = ""  # what the runtime's numeric invariance check found (with_conditioning)

    @classmethod
    def from_plan(cls, plan: Plan, title: str = "", definition: str = "") -> "Explanation":
        products = [ProductExplanation.from_decision(d) for d in plan.products]
        proofs = [p for pe in products for p in pe.proofs]
        steps = [(s.name, ir.to_text(s.node), s.kind) for s in plan.steps]
        leaves = Leaves()
        formula = symbolic(plan.expr, leaves)
        legend = tuple((s, ir.to_text(n)) for s, n in leaves.legend())
        result = symbolic(plan.epilogue, Leaves())
        written = _exact_text(plan.expr)
        return cls(title or written, written, products, proofs,
                   steps, ir.to_text(plan.epilogue), plan, None, formula, legend, result, definition)

    def _replace(self, **changes) -> "Explanation":
        from dataclasses import replace
        return replace(self, **changes)

    def with_cuda(self, source: str) -> "Explanation":
        return self._replace(cuda=source)

    def with_definition(self, definition: str, lets=()) -> "Explanation":
        """The same explanation showing the metric's text definition, with its ``let`` names
        ((name, IR node), ...) standing for the subexpressions they bind."""
        leaves = Leaves()
        named = []
        for name, node in lets:
            fresh = node.key not in leaves.names
            value = symbolic(node, leaves)  # in terms of the lets bound before it
            if fresh and isinstance(value, sp.Symbol) and leaves.names.get(node.key, (None,))[0] == value:
                value = ir.to_text(node)  # the let names a product or reduction itself
            leaves.names[node.key] = (sp.Symbol(name), node)
            named.append((sp.Symbol(name), value))
        formula = symbolic(self.plan.expr, leaves)
        legend = tuple(named) + tuple((s, ir.to_text(n)) for s, n in leaves.legend()
                                      if s not in {q for q, _ in named})
        return self._replace(definition=definition, formula=formula, legend=legend)

    # -- checks on identical rows (gbdist/compiler/exact.py) ------------------

    def with_conditioning(self, found: str) -> "Explanation":
        """The same explanation with the row invariance the runtime found for the plan
        (``gbdist.runtime.invariance``: a numeric check, so it is run by the stages that
        run plans, not by the compiler)."""
        return self._replace(conditioning=found)

    def _exact_lines(self) -> tuple[str, str]:
        from .exact import self_value
        return (str(self_value(self.plan)),
                self.conditioning or "decided when the plan runs (gbdist.runtime.invariance)")

    def _precision_lines(self) -> list[str]:
        """How float32 data is computed on the CUDA backend (accumulate="auto")."""
        out = []
        for st in self.plan.steps:
            fs = getattr(st.node, "float_split", None)
            if fs is not None:
                f, h, bound = fs
                if getattr(bound, "kernel", None) is not None:
                    how = f"{bound.describe()}; inputs outside that range: in float64"
                else:
                    how = (f"in float32 ({bound.describe()}: proven by rounding analysis; inputs "
                           "outside that range: in float64)")
                out.append(f"{st.name}: ⊗ = f + h, f(x, y) = {text(f.formula)} {how}, "
                           f"h(x, y) = {text(h.formula)} and the sums in float64")
        if getattr(self.plan, "float32", None) is not None:
            out.append("the whole plan in float32: max/min of terms f ≥ 0 with "
                       f"{self.plan.float32.describe()} (proven by rounding analysis), and max "
                       "and min round nothing; inputs outside that range: in float64")
        return out or ["⊗, the sums and the epilogue in float64 (CUDA, accumulate=\"auto\")"]

    # -- renderings -----------------------------------------------------------

    def __str__(self) -> str:
        out = [f"== {self.title}"]
        if self.definition:
            out += ["definition", *("  " + line for line in self.definition.splitlines())]
        out.append(f"expression  {self.expression}")
        if self.formula is not None:
            out.append(f"  as math    {text(self.formula)}")
            out += [f"    {text(s)} = {text(t)}" for s, t in self.legend]
        out += explain_lines(self.plan)
        out.append("")
        if not self.products:
            out.append("no products: only reductions and pointwise functions")
        for p in self.products:
            out.append(str(p))
            out.append("")
        out.append("plan")
        for name, txt, kind in self.steps:
            out.append(f"  {name} = {txt}    [{STEP_SHAPE.get(kind, kind)}]")
        out.append(f"  result = {text(self.result) if self.result is not None else self.epilogue}")
        same, conditioning = self._exact_lines()
        out.append(f"  identical rows  {same}")
        out.append(f"  conditioning    {conditioning}")
        out += [f"  float32 data    {line}" for line in self._precision_lines()]
        out += pruning.explain_lines(self.plan)
        if self.cuda:
            out += ["", "generated CUDA", self.cuda]
        return "\n".join(out)

    def to_markdown(self, heading: str = "##") -> str:
        """The explanation as Markdown with $…$ mathematics (docs, notebooks)."""
        out = [f"{heading} {self.title}", ""]
        if self.definition:
            out += ["```", self.definition, "```", ""]
        out.append(f"expression: `{self.expression}`")
        if self.formula is not None:
            out += ["", f"$$d = {latex(self.formula)}$$", ""]
            out += [f"- ${latex(s)}$ = " + (f"`{t}`" if isinstance(t, str) else f"${latex(t)}$")
                    for s, t in self.legend]
        out.append("")
        for p in self.products:
            out += [p.markdown(), ""]
        out += ["**plan**", ""]
        out += [f"- ${_tex_escape(name)}$ = `{txt}` ({STEP_SHAPE.get(kind, kind)})"
                for name, txt, kind in self.steps]
        if self.result is not None:
            out.append(f"- result $= {latex(self.result)}$")
        same, conditioning = self._exact_lines()
        out += [f"- identical rows: {_md_escape(same)}", f"- conditioning: {_md_escape(conditioning)}"]
        out += [f"- float32 data: {_md_escape(line)}" for line in self._precision_lines()]
        out.append(f"- pruning (kNN): {_md_escape(pruning.summary(self.plan))}")
        return "\n".join(out) + "\n"

    def _repr_markdown_(self) -> str:
        return self.to_markdown()

    def _repr_latex_(self) -> str:
        parts = [r"\textbf{" + _tex_escape(self.title) + "}"]
        if self.formula is not None:
            parts.append("d = " + latex(self.formula))
        parts += [p.latex() for p in self.products]
        if self.result is not None:
            parts.append(r"\text{plan result} = " + latex(self.result))
        return "$$\\begin{array}{l} " + r" \\ ".join(parts) + r" \end{array}$$"

    def _repr_html_(self) -> str:
        """HTML with \\(…\\) mathematics (typeset by the notebook's MathJax)."""
        def row(label, pieces):
            cells = "".join(_html.escape(p) if isinstance(p, str) else f"\\({latex(p)}\\)"
                            for p in pieces)
            return f"<tr><th style='text-align:left'>{_html.escape(label)}</th><td>{cells}</td></tr>"
        out = [f"<h3>{_html.escape(self.title)}</h3>"]
        if self.formula is not None:
            out.append(f"<p>\\(d = {latex(self.formula)}\\)</p><ul>")
            out += [f"<li>\\({latex(s)}\\) = " + (f"<code>{_html.escape(t)}</code>" if isinstance(t, str)
                                                else f"\\({latex(t)}\\)") + "</li>"
                    for s, t in self.legend]
            out.append("</ul>")
        for p in self.products:
            out.append(f"<h4>product <code>{_html.escape(p.expression)}</code></h4><table>")
            out += [row(label, pieces) for label, pieces in p.rows()]
            out.append("</table><ul>")
            out += [f"<li>{_html.escape(q.claim)}: \\({latex(q.lhs)}"
                    + (f" = {latex(q.simple)}" if q.simple is not None else "")
                    + f" = {latex(q.rhs)}\\) "
                    f"<em>[{_html.escape(q.label)}; {_html.escape(q.where)}]</em>"
                    + (f" ({_html.escape(q.detail)})" if q.detail else "") + "</li>"
                    for q in p.proofs]  # the text's verdict, domain and counterexample
            out.append("</ul>")
        out.append("<h4>plan</h4><ul>")
        out += [f"<li>{_html.escape(n)} = <code>{_html.escape(t)}</code> "
                f"({_html.escape(STEP_SHAPE.get(k, k))})</li>" for n, t, k in self.steps]
        if self.result is not None:
            out.append(f"<li>result \\(= {latex(self.result)}\\)</li>")
        return "\n".join(out) + "</ul>"

    def _repr_pretty_(self, p, cycle):  # IPython's terminal
        p.text(str(self))

    def figure(self, which: str = "all"):
        """A matplotlib figure of the decision(s) and the plan (see ``explain_figures``)."""
        from .explain_figures import figure
        return figure(self, which)

    def save(self, path, fmt: str | None = None) -> None:
        """Write the explanation as text, md, html, svg or png (by ``fmt`` or the suffix)."""
        from .explain_figures import save
        save(self, path, fmt)


__all__ = ["Explanation", "ProductExplanation", "ProofExplanation"]
