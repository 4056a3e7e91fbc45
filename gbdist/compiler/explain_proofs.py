"""One checked identity of an explanation, and the simplified form printed beside a formula.

:class:`ProofExplanation` is a proof record (:mod:`gbdist.algebra.proofs`) with what its
verdict means for the plan; :func:`simpler` is the shorter form of a formula that sympy
proves equal to it, shown beside the formula as written (``(√x − √0)² (= x)``).
"""
from __future__ import annotations

from dataclasses import dataclass

import sympy as sp

from .explain_math import latex, text, tidy
from ..algebra.proofs import Proof

# What each kind of proof establishes, for the label printed beside it.
PROVED, EXHAUSTIVE, NUMERIC, EXPECTED, FAILED = (
    "proved", "exhaustive", "numeric", "refuted-as-expected", "failed")


@dataclass(frozen=True)
class ProofExplanation:
    """One checked identity and what its verdict means for the plan."""

    claim: str
    lhs: sp.Expr
    rhs: sp.Expr
    domain: str
    method: str
    holds: bool
    detail: str
    kind: str  # PROVED, EXHAUSTIVE, NUMERIC, EXPECTED or FAILED
    note: str = ""  # why an expected refutation is expected
    simple: sp.Expr | None = None  # lhs simplified, when shorter and proven equal (simpler)

    @classmethod
    def of(cls, p: Proof, decision_input_expected: bool, note: str = "") -> "ProofExplanation":
        if p.holds:
            kind = (PROVED if p.method == "sympy" else EXHAUSTIVE if p.method.startswith("exhaustive")
                    else NUMERIC)
        else:
            kind = EXPECTED if decision_input_expected and _is_decision_input(p) else FAILED
        lhs = tidy(p.lhs, p.domain)
        return cls(p.claim, lhs, tidy(p.rhs, p.domain), p.domain, p.method, p.holds, p.detail,
                   kind, note if kind == EXPECTED else "", simpler(lhs, p.domain))

    @property
    def label(self) -> str:
        """The verdict in words: what was established, and how strongly."""
        return {
            PROVED: "proved symbolically (sympy)",
            EXHAUSTIVE: "proved exhaustively on {0, 1}",
            NUMERIC: "checked numerically, not proved ("
                     + self.method.removeprefix("numeric").strip(" ()") + ")",
            EXPECTED: "refuted, as expected" + (f": {self.note}" if self.note else ""),
            FAILED: "FAILS: a real failure, the rewrite it supports is not applied",
        }[self.kind]

    @property
    def where(self) -> str:
        return {"nonnegative": "x, y ≥ 0", "boolean": "x, y ∈ {0, 1}"}.get(self.domain, "x, y real")

    def __str__(self) -> str:
        lhs = text(self.lhs) + (f" (= {text(self.simple)})" if self.simple is not None else "")
        out = f"{self.claim}: {lhs} = {text(self.rhs)}  [{self.label}; {self.where}]"
        if self.detail:
            out += f" ({self.detail})"
        return out

    def markdown(self) -> str:
        mark = {PROVED: "✔", EXHAUSTIVE: "✔", NUMERIC: "≈", EXPECTED: "✘ (expected)",
                FAILED: "✘ **FAILS**"}[self.kind]
        lhs = latex(self.lhs) + (f" = {latex(self.simple)}" if self.simple is not None else "")
        out = (f"{mark} {_md_escape(self.claim)}: ${lhs} = {latex(self.rhs)}$ "
               f"— *{self.label}; {self.where}*")
        return out + (f" ({_md_escape(self.detail)})" if self.detail else "")


def _is_decision_input(p: Proof) -> bool:
    """The 'f(x, zb) = e' checks whose answer is the decision's input, not a rewrite."""
    return "vanish" in p.claim


def _md_escape(s: str) -> str:
    return s.replace("|", "\\|").replace("*", "\\*").replace("_", "\\_")


def simpler(expr, domain: str = "real"):
    """A shorter form of ``expr`` (a formula over x, y) that is provably equal to it on
    ``domain`` — sympy's simplification, accepted only when :func:`gbdist.algebra.proofs.check`
    proves the two equal symbolically (special points included) — or None."""
    from ..algebra.proofs import check, simplify
    if not isinstance(expr, sp.Expr) or expr.is_number or not expr.free_symbols:
        return None
    try:
        s = tidy(simplify(expr, domain), domain)
        written, short = text(expr), text(s)
        if len(short) >= len(written) or short == written:
            return None
        proof = check("", expr, s, domain)
    except Exception:  # noqa: BLE001 - no simplified form is always a safe answer
        return None
    return s if proof.holds and proof.method == "sympy" else None
