"""Metric parameters that are column operands (vectors over the columns), in the front ends.

A metric parameter holds a number or a vector. A vector (an array passed as ``w=``) is a
*column operand*: it stays symbolic (:class:`gbdist.compiler.ir.ColVector`, bound by name
when the metric runs) and reaches the ops that read it as ``w[col]``
(:mod:`gbdist.algebra.columns`). This module holds what the front ends need for them:

* :func:`marker` / :func:`split`: the arrays of a call's parameters as markers (what a
  compiled program is keyed on: the name, never the values) and the arrays themselves
  (what the run binds);
* :func:`column_default`: a parameter default ``var(A, B)``, ``range(A, B)`` or
  ``gap(A, B)`` (the column variances, ranges or smallest gaps between distinct values of
  the data, computed when the vector is not passed);
* :func:`split_requires`: a ``requires`` clause's facts about column operands (``w >= 0``,
  ``V > 0``), which are their domains, checked when the vectors are bound, apart from the
  conditions on numbers, checked when the metric is built;
* :func:`route`: a named SciPy metric called with ``w=`` (``minkowski``, ``euclidean``
  ...) goes to its column-aware form in the library (``metrics.gbd``, "column-aware
  metrics").
"""
from __future__ import annotations

import numpy as np

from ..compiler import ir
from ..errors import TypeCheckError

# SciPy's metric (its gbdist name) -> the library metric that takes ``w`` as a column
# operand (gbdist/front/metrics.gbd, "column-aware metrics"), for calls that pass w=
WEIGHTED = {
    "minkowski": "weighted_minkowski", "euclidean": "weighted_euclidean",
    "sqeuclidean": "weighted_sqeuclidean", "manhattan": "weighted_cityblock",
    "chebyshev": "weighted_chebyshev", "braycurtis": "weighted_braycurtis",
    "cosine": "weighted_cosine", "dice": "weighted_dice", "jaccard": "weighted_jaccard",
    "russellrao": "weighted_russellrao", "yule": "weighted_yule",
    "rogerstanimoto": "weighted_rogerstanimoto", "sokalmichener": "weighted_rogerstanimoto",
    "sokalsneath": "weighted_sokalsneath", "matching": "weighted_matching",
    "correlation": "weighted_correlation", "canberra": "weighted_canberra",
    "hamming": "weighted_hamming",
}

# SciPy's metrics that take w= and that gbdist's algebra cannot weight (yet): the reason.
# (Every one of SciPy's has a form now: canberra and hamming through a column factor read
# by the kernels, compiler/columns.py.)
NOT_WEIGHTED: dict = {}


# Defaults of a k × k matrix parameter (whiten's VI): the inverse covariance of the rows of
# both operands (SciPy's mahalanobis default in cdist / pdist)
MATRIX_STATISTICS = ("invcov", "mean")  # mean: the column means, a vector of any sign


def is_vector(v) -> bool:
    """Whether a parameter value is a vector (a column operand), not a number."""
    if isinstance(v, ir.ColVector):
        return True
    if isinstance(v, (str, bytes, bool, int, float, np.number)) or v is None:
        return False
    return hasattr(v, "__len__") or hasattr(v, "__array__") or hasattr(v, "shape")


def split(params: dict) -> tuple[dict, dict]:
    """(params with each vector replaced by its marker, name -> the vector)."""
    out, arrays = {}, {}
    for k, v in params.items():
        if is_vector(v) and not isinstance(v, ir.ColVector):
            arrays[k] = v
            out[k] = ir.ColVector(k)
        else:
            out[k] = v
    return out, arrays


def route(name: str, params: dict) -> str:
    """The metric a named metric called with a column operand ``w`` runs: its
    column-aware form (``minkowski`` with w= is ``weighted_minkowski``; ``gower`` with a
    vector ``cat=`` is ``gower_mixed``), else itself; a SciPy metric gbdist cannot weight
    is an InputError that says why."""
    if "w" in params and is_vector(params["w"]):
        if name in NOT_WEIGHTED:
            from ..errors import InputError
            raise InputError(f"SciPy's w= (per-column weights) is not available for "
                             f"{name!r} in gbdist", got="w= a vector",
                             expected="w= with " + ", ".join(sorted(WEIGHTED)),
                             hint=f"{NOT_WEIGHTED[name]}; docs/metrics.md, 'Weights read at each "
                                  "column'")
        if name == "gower" and is_vector(params.get("cat")):
            # w·min(|x − y|·s, 1): a column factor read at each column (compiler/colfactor.py)
            return "gower_mixed"
        return WEIGHTED.get(name, name)
    if name == "gower" and is_vector(params.get("cat")):
        return "gower_mixed"
    return name


def column_default(tree, operands) -> str | None:
    """``"var"`` / ``"range"`` / ``"gap"`` when a parameter default is ``var(A, B)`` /
    ``range(A, B)`` / ``gap(A, B)`` over the metric's two operands (the column variances /
    ranges / smallest gaps between distinct values of the data), else None."""
    if getattr(tree, "data", None) != "call":
        return None
    name = str(tree.children[0])
    from ..algebra.columns import STATISTICS
    if name not in STATISTICS + MATRIX_STATISTICS:
        return None
    args = tree.children[1]
    names = [str(a.children[0]) for a in getattr(args, "children", ())
             if getattr(a, "data", None) == "name"]
    if len(tree.children) > 2 and tree.children[2] is not None or \
            names != [str(o) for o in operands] or len(args.children) != 2:
        raise TypeCheckError(f"a column operand's default {name}(...) takes the metric's two "
                             "operands", expected=f"{name}({', '.join(map(str, operands))})")
    return name


def _conjuncts(tree) -> list:
    if getattr(tree, "data", None) == "and_":
        return _conjuncts(tree.children[0]) + _conjuncts(tree.children[1])
    return [tree]


def _names_in(tree) -> set:
    out = set()
    stack = [tree]
    while stack:
        t = stack.pop()
        if getattr(t, "data", None) == "name":
            out.add(str(t.children[0]))
        stack.extend(c for c in getattr(t, "children", ()) if hasattr(c, "data"))
    return out


def _zero(tree) -> bool:
    return getattr(tree, "data", None) == "number" and float(str(tree.children[0])) == 0


def _relative_fact(c) -> str | None:
    """The column operand ``w`` when the conjunct ``c`` is ``mean(w) == 1``, else None."""
    if getattr(c, "data", None) != "compare" or str(c.children[1]) != "==":
        return None
    call, one = c.children[0], c.children[2]
    if getattr(call, "data", None) != "call" or str(call.children[0]) != "mean" or \
            getattr(one, "data", None) != "number" or float(str(one.children[0])) != 1:
        return None
    args = getattr(call.children[1], "children", ())
    if len(args) != 1 or getattr(args[0], "data", None) != "name" or \
            len(call.children) > 2 and call.children[2] is not None:
        return None
    return str(args[0].children[0])


def split_requires(tree, columns: set, src) -> tuple[dict, list]:
    """({column name: {"positive": bool, "relative": bool}} stated by ``w >= 0`` /
    ``w > 0`` / ``mean(w) == 1`` conjuncts, the other conjuncts). Any other condition on a
    column operand is a TypeCheckError: a vector's domain is all a requires clause may say
    about it. ``mean(w) == 1`` makes w *relative* weights: the metric is a weighted average
    (Σ w·d / Σ w) that scaling w leaves unchanged, so the vector is bound divided by its
    mean and Σ w is the number of columns (``ncols(A)``)."""
    facts, rest = {}, []
    if tree is None:
        return facts, rest
    for c in _conjuncts(tree):
        used = _names_in(c) & columns
        if not used:
            rest.append(c)
            continue
        rel = _relative_fact(c)
        if rel in columns:
            facts.setdefault(rel, {"positive": False, "relative": False})["relative"] = True
            continue
        if getattr(c, "data", None) == "compare":
            a, op, b = c.children
            op = str(op)
            name = None
            if getattr(a, "data", None) == "name" and _zero(b) and op in (">", ">="):
                name = str(a.children[0])
            elif getattr(b, "data", None) == "name" and _zero(a) and op in ("<", "<="):
                name = str(b.children[0])
            if name in columns:
                fact = facts.setdefault(name, {"positive": False, "relative": False})
                fact["positive"] = fact["positive"] or op in (">", "<")
                continue
        raise TypeCheckError(
            f"a requires clause can only state the domain of a column operand "
            f"({', '.join(sorted(used))})", span=src.span(c),
            expected="w >= 0 (nonnegative: the default), w > 0 (positive) or mean(w) == 1 "
                     "(relative weights, bound divided by their mean), joined by and",
            hint="a column operand is a vector: its values are checked one by one when it is bound")
    for name, fact in facts.items():
        if fact["positive"] and fact["relative"]:
            raise TypeCheckError(f"the column operand {name!r} cannot be both positive and "
                                 "relative", span=src.span(tree),
                                 expected="w > 0, or w >= 0 and mean(w) == 1")
    return facts, rest


def upgraded(params: dict, facts: dict) -> dict:
    """The column operands of ``params`` with the domains the metric states."""
    out = dict(params)
    for k, v in params.items():
        fact = facts.get(k)
        if not isinstance(v, ir.ColVector) or not fact:
            continue
        if (fact["positive"] and not v.positive) or (fact["relative"] and not v.relative):
            out[k] = ir.ColVector(v.name, v.positive or fact["positive"], v.default, v.span,
                                  v.relative or fact["relative"])
    return out


def defaults_json(params: dict) -> dict:
    """A metric's parameter defaults as JSON (the library's stored index): a column
    operand's default as {"column": name, "positive": bool, "default": statistic}."""
    return {k: {"column": v.name, "positive": v.positive, "default": v.default,
                "relative": v.relative, "square": v.square, "signed": v.signed}
            if isinstance(v, ir.ColVector) else v for k, v in params.items()}


def defaults_from_json(params: dict) -> dict:
    """The inverse of :func:`defaults_json`, checked (a malformed entry: ValueError)."""
    from ..algebra.columns import STATISTICS, check_name
    out = {}
    for k, v in params.items():
        if isinstance(v, dict):
            if set(v) - {"relative", "square", "signed"} != {"column", "positive", "default"} or \
                    v["default"] not in (None, *STATISTICS, *MATRIX_STATISTICS) or \
                    not isinstance(v["positive"], bool) or \
                    not isinstance(v.get("relative", False), bool) or \
                    not isinstance(v.get("square", False), bool) or \
                    not isinstance(v.get("signed", False), bool):
                raise ValueError("a malformed column operand in the stored library index")
            try:
                check_name(v["column"])
            except Exception:  # noqa: BLE001 - a bad record
                raise ValueError("a malformed column operand name") from None
            v = ir.ColVector(v["column"], v["positive"], v["default"],
                             relative=v.get("relative", False), square=v.get("square", False),
                             signed=v.get("signed", False))
        out[k] = v
    return out
