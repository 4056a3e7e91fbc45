"""``gbdist check``: parse, type-check and prove every definition of a text,
one :class:`CheckReport` per definition. Nothing is registered.

The parser, the loader and sympy are imported by :func:`check` itself: this module is
imported with the package (``gbdist.front.check`` is the function) and costs nothing.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..errors import GbdistError, Span


@dataclass(frozen=True)
class CheckReport:
    """The verdict on one definition of a file (``gbdist check``)."""

    kind: str  # "op", "semiring", "monoid", "def", "metric", "graph", "alias", "syntax"
    name: str
    span: Span | None
    ok: bool
    lines: tuple[str, ...]

    def __str__(self) -> str:
        where = f"{self.span}: " if self.span else ""
        head = f"{where}{'ok   ' if self.ok else 'ERROR'} {self.kind} {self.name}"
        return "\n".join([head] + [f"    {line}" for line in self.lines])


def check(text: str, source: str = "<text>") -> list[CheckReport]:
    """Parse, type-check and prove every definition; one report per definition.

    A definition that fails does not stop the others (those that use it then
    report an unknown name). Nothing is registered.
    """
    from lark import Token

    from .library import ensure_builtins
    from .loader import Loader
    from .syntax import unexpected
    ensure_builtins()
    loader = Loader(text, source)
    try:
        stmts = loader.statements()
    except GbdistError as e:
        return [CheckReport("syntax", "", e.span, False, tuple(str(e).splitlines()))]
    reports = []
    for stmt in stmts:
        kind = stmt.data.removesuffix("_def")
        first = stmt.children[0]
        name = str(first) if isinstance(first, Token) else ", ".join(map(str, first.children))
        span = loader.src.span(first)
        try:
            obj = loader.statement(stmt)
            lines = _verify(kind, obj)
            reports.append(CheckReport(kind, name, span, True, tuple(lines)))
        except GbdistError as e:
            reports.append(CheckReport(kind, name, e.span or span, False, tuple(str(e).splitlines())))
        except MemoryError:
            raise
        except Exception as e:  # noqa: BLE001 - sympy failing on one definition: its report
            e = unexpected(e, span)
            reports.append(CheckReport(kind, name, span, False, tuple(str(e).splitlines())))
    return reports


def _proof_summary(a) -> str:
    refuted = sum(not p.holds for p in a.proofs)
    return (f"checks: {len(a.proofs) - refuted} proven"
            + (f", {refuted} refuted (those shortcuts are not taken)" if refuted else ""))


def _verify(kind: str, obj) -> list[str]:
    """Analyse and prove a definition; lines describing what was found."""
    import sympy as sp

    from ..algebra import ops as _ops
    from ..compiler import ir
    from ..compiler.analysis import analyze
    from ..compiler.plan import cached_plan
    from ..names import ROLES
    from .scope import ParamOp
    if kind == "op":
        if isinstance(obj, ParamOp):
            return [f"{obj!r}: parameters are substituted where it is used"]
        lines = [f"{obj!r}    domain {obj.domain}"]
        if obj.arity == 2:
            try:
                m = _ops.as_monoid(obj)
            except GbdistError:
                lines.append("not a monoid (no identity): usable as ⊗, not as ⊕")
            else:
                lines.append(f"also usable as ⊕: {m!r}")
        return lines
    if kind == "semiring":
        # the fills as a plan passes them: one cached analysis for this check and the metrics
        a = analyze(obj, sp.Integer(0), sp.Integer(0))
        return [f"{obj!r}: {a.strategy}"
                + (f", expansion rank {a.expansion_rank}" if a.expansion_rank else ""),
                _proof_summary(a)]
    if kind == "metric":
        if any(v is None for v in obj.params.values()):
            return ["has parameters without defaults: analysed when they are given"]
        plan = cached_plan(obj.expression(), tuple(sorted(ROLES)))
        lines = []
        for d in plan.products:
            a = d.analysis
            lines.append(f"{ir.to_text(d.node)}: {a.strategy}"
                         + (f", expansion rank {a.expansion_rank}" if a.expansion_rank else ""))
            lines.append("  " + _proof_summary(a) + (f"; OVERRIDE: {a.override}" if a.override else ""))
        lines.append(f"plan: {len(plan.steps)} step(s), output {plan.output_kind}")
        return lines
    if kind == "def":
        return [f"{obj!r}: inlined where it is called"]
    if kind == "monoid":
        return [repr(obj)]
    if kind == "graph":
        return [f"step {s.index + 1}: {obj.step_text(s)} -> {s.kind}" for s in obj.steps]
    return ["alias of a metric defined above"]
