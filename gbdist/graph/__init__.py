"""Graph operations (GraphBLAS): sparse results, masks, accumulators, vectors.

    import gbdist as gb
    from gbdist import graph as gr

    A = gb.Matrix(adjacency)                       # fill="absent": a graph
    C = gr.mxm(A, A, gb.semirings.plus_pair, mask=A.S)   # triangles per edge
    w = gr.vxm(frontier, A, gb.semirings.any_pair, mask=~visited.S, replace=True)

docs/graph_api.md is the reference. Operands are :class:`Matrix` / :class:`Vector`
(SciPy/CuPy sparse and NumPy/CuPy arrays are wrapped as graphs); results are sparse
and live where the operands live. Graph definitions written in the text language
(``graph triangles(A) = ...``, docs/language.md) run with :func:`run` / :func:`trace`.
"""
from .objects import ABSENT, Matrix, Vector
from .masks import Mask
from .operations import (
    apply, ewise_add, ewise_mult, mxm, mxv, nvals, reduce_cols, reduce_rows, reduce_scalar,
    select, vxm)
from .indexing import assign, extract, subassign
from .union import ewise_union
from .reductions import argmax, argmin, count
from .structure import concat, diag, kronecker, resize, split
from .scalar import Scalar, getitem as _getitem  # noqa: F401 (A[i, j], through objects)
from .io import from_networkx, load, save, to_networkx
from . import hyper
from .hyper import HyperMatrix, HyperVector
from ..algebra.positional import INDEX_UNARY as index_unary_ops, IndexUnaryOp, index_unary
from .dispatch import available, get_kernels
from .program import run, trace
from ..compiler.graph import Decision, GraphSemanticsError
from ..errors import ParameterError


def explain(result_or_operation) -> str:
    """The fill decision of a graph result (``result.decision``) as text, and the kernel
    choice of a symmetric product (``result.spmv_choice``) when it has one."""
    d = getattr(result_or_operation, "decision", result_or_operation)
    if not isinstance(d, Decision):
        raise ParameterError("gr.explain takes a graph result (with .decision) or a Decision",
                             got=type(result_or_operation).__name__)
    choice = getattr(result_or_operation, "spmv_choice", None)
    return d.explain() + ("" if choice is None else "\n" + choice.explain())


__all__ = [
    "Matrix", "Vector", "Mask", "ABSENT", "mxm", "mxv", "vxm", "ewise_add", "ewise_mult",
    "apply", "select", "reduce_rows", "reduce_cols", "reduce_scalar", "extract", "assign",
    "nvals", "explain", "ewise_union", "count", "argmin", "argmax", "kronecker", "diag",
    "concat", "split", "resize", "subassign", "Scalar", "to_networkx", "from_networkx", "save",
    "load", "hyper", "HyperMatrix", "HyperVector", "index_unary", "index_unary_ops", "IndexUnaryOp", "run", "trace", "Decision", "GraphSemanticsError", "available", "get_kernels",
]
