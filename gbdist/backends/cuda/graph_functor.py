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
    record is keyed by the ops' structural keys, the domain and this printer's files
    (:data:`FUNCTOR_CODE`), digest-checked like every record; a miss prints it again and
    stores it. The text is compiled as the printed one would be: the cache folder's trust."""
    from ...algebra import records
    out = np.dtype(out_dtype)
    rkey = records.key_of("cuda-graph-functor", records.code_digest(*FUNCTOR_CODE),
                          None if mul is None else mul.key, monoid.key, out.str, bool(acc64))
    found = records.load(rkey, "programs")
    text = found.get("functor") if found is not None else None
    if isinstance(text, str) and text.startswith("struct GbF {"):
        return text
    text = functor(mul, monoid, out, acc64)
    records.store(rkey, {"functor": text}, "programs")
    return text
