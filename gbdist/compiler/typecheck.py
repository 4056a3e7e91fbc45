"""Kinds and roles: what each node of an expression is, and how it broadcasts.

Kinds: ``sparse`` (a matrix operand, possibly transformed by apply/transpose),
``vector`` (an mxv operand), and the value kinds of the output grid:
``scalar``, ``col`` (indexed by the output row i), ``row`` (indexed by the
output column j) and ``matrix`` (indexed by i and j).

Roles: in ``mxm(A, B.T)`` the rows of A index the output rows (role ``i``)
and the rows of B index the output columns (role ``j``). A reduction
``reduce(A, plus)`` is a ``col`` because A has role ``i``; ``reduce(B, plus)``
is a ``row``; their product broadcasts to the outer product.

Each operand is identified by ``(name, transposed)``: ``mxm(A, B)`` (no .T)
takes the rows of ``B.T``, i.e. ``("B", True)``.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from . import ir
from ..errors import TypeCheckError

VALUE_KINDS = ("scalar", "col", "row", "matrix")
_RANK = {"scalar": 0, "col": 1, "row": 1, "matrix": 2}


def row_operand(node: ir.Node, transpose: bool = False) -> tuple[str, bool, tuple]:
    """Canonical form of a sparse operand: (base name, transposed?, unary ops inner→outer)."""
    ops_ = []
    flip = transpose
    while isinstance(node, (ir.Apply, ir.Transpose)):
        if isinstance(node, ir.Apply):
            ops_.append(node.op)
        else:
            flip = not flip
        node = node.arg
    if not isinstance(node, (ir.Matrix, ir.Vector)):
        raise TypeCheckError("a product or reduction needs a matrix operand here",
                             got=ir.to_text(node), span=getattr(node, "span", None),
                             hint="mxm, mxv, reduce and apply take matrices such as A, B.T, apply(abs, A)")
    return node.name, flip, tuple(reversed(ops_))


@dataclass(frozen=True)
class Typing:
    """The result of type checking: a kind per node key and a role per operand."""

    kinds: dict  # node key -> kind
    roles: dict  # (name, transposed) -> "i" | "j" | "v"
    output: str  # kind of the root

    def kind(self, node: ir.Node) -> str:
        return self.kinds[node.key]


def _span(node):
    return getattr(node, "span", None)


def infer(root: ir.Node, default_roles: dict | None = None) -> Typing:
    """Type-check ``root``; ``default_roles`` maps operand names to "i"/"j" (metrics)."""
    roles: dict = {}
    for name, role in (default_roles or {}).items():
        roles[(name, False)] = role

    def claim(operand, role, node):
        key = operand[:2]
        prev = roles.get(key)
        if prev is None:
            roles[key] = role
        elif prev != role:
            roles[key] = "ij"  # used on both sides (self-product); reductions become ambiguous

    # Pass 1: roles from products.
    for node in ir.walk(root):
        if isinstance(node, ir.MxM):
            left, right = row_operand(node.left), row_operand(node.right, transpose=True)
            _check_orientation(node, left, right, default_roles or {})
            claim(left, "i", node)
            claim(right, "j", node)
        elif isinstance(node, ir.MxV):
            claim(row_operand(node.matrix), "i", node)
            claim(row_operand(node.vector), "v", node)
    # Operands seen only in reductions: first gets i, second j.
    free = [s for s in ir.symbols(root) if not isinstance(s, ir.ColVector)
            and (s.name, False) not in roles and (s.name, True) not in roles]
    for s, role in zip(free, ("i", "j")):
        roles[(s.name, False)] = role

    kinds: dict = {}
    for node in ir.walk(root):
        kinds[node.key] = _kind(node, kinds, roles)
    return Typing(kinds, roles, kinds[root.key])


def _check_orientation(node, left, right, default_roles: dict) -> None:
    """A metric's operands hold one sample per row: a product must pair rows with rows.

    Where roles are declared (a metric: A's rows index the output rows, B's rows the
    output columns), ``mxm(A, B)`` without ``.T`` would sum over B's rows and index the
    output by B's columns. On square data the shapes agree and the distances are
    silently wrong, so the missing ``.T`` is refused here, before any data is seen.
    """
    for operand, second in ((left, False), (right, True)):
        name, flipped, _ = operand
        if not (flipped and name in default_roles):
            continue
        if second:
            fixed = replace(node, right=ir.Transpose(node.right))
            what = f"is missing a .T on {name}"
            where = f"{name}'s rows would be summed over, and the output's columns would be {name}'s columns"
        else:
            fixed = replace(node, left=node.left.arg if isinstance(node.left, ir.Transpose)
                            else ir.Transpose(node.left))
            what = f"has a .T too many on {name}"
            where = f"the output's rows would be {name}'s columns, not its rows"
        raise TypeCheckError(
            f"{ir.to_text(node)} {what}: a metric compares rows (samples) with rows, "
            f"but here {where}",
            expected="mxm(A, B.T, ...): A @ B.T, every row of A against every row of B",
            got=ir.to_text(node), span=_span(node), hint=f"write {ir.to_text(fixed)}")


def _value(node, kinds, what: str) -> str:
    k = kinds[node.key]
    if k not in VALUE_KINDS:
        raise TypeCheckError(
            f"{what} needs a value (scalar, vector or matrix result), not a sparse operand",
            got=f"{ir.to_text(node)} (a {k} operand)", span=_span(node),
            hint="combine operands with mxm(...), mxv(...) or reduce(...) first")
    return k


def _sparse(node, kinds, what: str):
    k = kinds[node.key]
    if k != "sparse":
        raise TypeCheckError(f"{what} needs a matrix operand", got=f"{ir.to_text(node)} (a {k})",
                             span=_span(node), hint="e.g. A, B.T or apply(square, A)")


def _kind(node, kinds, roles) -> str:
    if isinstance(node, ir.Matrix):
        return "sparse"
    if isinstance(node, ir.Vector):
        return "vector"
    if isinstance(node, ir.Transpose):
        _sparse(node.arg, kinds, ".T")
        return "sparse"
    if isinstance(node, ir.Apply):
        if kinds[node.arg.key] not in ("sparse", "vector"):
            raise TypeCheckError("apply(op, M) needs a matrix operand M", got=ir.to_text(node.arg),
                                 span=_span(node), hint="apply works on stored values; use "
                                 "sqrt(...), abs(...) for values over the output grid")
        if node.op.arity != 1:
            raise TypeCheckError(f"apply needs a unary op; {node.op.name!r} takes two arguments",
                                 span=_span(node))
        return kinds[node.arg.key]
    if isinstance(node, ir.MxM):
        _sparse(node.left, kinds, "mxm's first argument")
        _sparse(node.right, kinds, "mxm's second argument")
        return "matrix"
    if isinstance(node, ir.MxV):
        _sparse(node.matrix, kinds, "mxv's first argument")
        if kinds[node.vector.key] != "vector":
            raise TypeCheckError("mxv's second argument must be a vector operand",
                                 got=ir.to_text(node.vector), span=_span(node))
        return "col"
    if isinstance(node, ir.RowReduce):
        _sparse(node.arg, kinds, "reduce")
        name, flipped, _ = row_operand(node.arg)
        role = roles.get((name, flipped))
        if role == "ij":
            raise TypeCheckError(
                f"reduce({ir.to_text(node.arg)}) is ambiguous: {name} indexes both the output rows "
                "and the output columns", span=_span(node),
                hint="bind the two sides to two names (e.g. mxm(A, B.T) with B = A at run time)")
        if role == "i":
            return "col"
        if role == "j":
            return "row"
        raise TypeCheckError(
            f"reduce({ir.to_text(node.arg)}) does not index the output rows or columns",
            span=_span(node), hint="reduce the matrix whose rows index the result (A, or B in mxm(A, B.T))")
    if isinstance(node, ir.NCols):
        _sparse(node.arg, kinds, "ncols")
        return "scalar"
    if isinstance(node, ir.Const):
        return "scalar"
    if isinstance(node, ir.Pointwise):
        ks = [_value(a, kinds, f"{node.fn}()") for a in node.args]
        return broadcast(ks, node)
    if isinstance(node, ir.Ref):
        return node.kind
    if isinstance(node, ir.Intersect):
        return "matrix"
    raise TypeCheckError(f"unexpected node {type(node).__name__}", span=_span(node))


def broadcast(ks: list[str], node=None) -> str:
    """The kind of a pointwise result: col and row make a matrix."""
    present = set(ks) - {"scalar"}
    if not present:
        return "scalar"
    if "matrix" in present or {"col", "row"} <= present:
        return "matrix"
    return present.pop()
