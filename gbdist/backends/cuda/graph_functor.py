"""The functor a graph kernel module is compiled with (issue 12, issue 30): its text found from
a stored record, or printed from the ops' sympy formulas by :mod:`.graph_printer` (imported
only then: a process that runs kernels printed before imports no sympy)."""
from __future__ import annotations

import numpy as np


def functor(mul, monoid, out_dtype, acc64: bool = False) -> str:
    """The ``GbF`` struct: ⊗ = ``mul`` (an op, or None for reductions), ⊕ = ``monoid``,
    both evaluated in the domain ``out_dtype`` (:mod:`.graph_codegen`'s docstring), printed
    from the ops' sympy formulas by :mod:`.graph_printer`."""
    from .graph_printer import functor as printed
    return printed(mul, monoid, out_dtype, acc64)


FUNCTOR_CODE = tuple(f"backends/{f}.py" for f in (
    "cuda/graph_functor", "cuda/graph_codegen", "cuda/graph_printer", "cuda/codegen", "graph_reference"))
"""The files that print a functor from its recipe (:func:`stored_functor`)."""


def stored_functor(mul, monoid, out_dtype, acc64: bool = False) -> str:
    """:func:`functor`'s text, found from a stored record when an earlier process printed it
    (DESIGN.md section 6, as the compiled backend's modules: printing imports sympy, and a
    process that only runs kernels printed before must not; a GPU triangle count's first call
    in a fresh process spent 3.4 of 3.6 s importing sympy, one H200, 2026-11-28 (i)). The
    record (``records.remembered``, a program record: a functor may pass an analysis's
    string limit) is keyed by the ops' structural keys, the domain and this printer's files
    (:data:`FUNCTOR_CODE`), digest-checked like every record; a miss prints it again and
    stores it. The text is compiled as the printed one would be: the cache folder's trust.
    No process-wide memo here: ``CudaGraphKernels._kernels`` keeps the source it makes."""
    from ...algebra import records
    out = np.dtype(out_dtype)
    key = (records.code_digest(*FUNCTOR_CODE), None if mul is None else mul.key, monoid.key,
           out.str, bool(acc64))
    return records.remembered({}, "cuda-graph-functor", 1, key, _text,
                              lambda: functor(mul, monoid, out, acc64), lambda t: {"functor": t},
                              kind="programs")


def _text(record) -> str:
    """A stored functor's text (KeyError/TypeError: a miss, ValueError: not a functor)."""
    text = record["functor"]
    if not isinstance(text, str) or not text.startswith("struct GbF {"):
        raise ValueError("not a functor's text")
    return text
