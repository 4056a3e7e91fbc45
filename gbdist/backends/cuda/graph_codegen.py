"""CUDA source for the graph kernels (issue 12): a functor struct from the ops' formulas,
the kernel templates of ``kernels/graph_kernels.cuh``, and the instantiation names.

The functor ``GbF`` holds ⊗ (``mul``, over x = the left value and y = the right value),
⊕ (``add``) and ⊕'s identity, printed from the ops' sympy formulas by :mod:`.graph_printer`
(found from a stored record by :mod:`.graph_functor`: this module imports no sympy). ``out_dtype`` is the
op's domain D; the types follow the reference (:mod:`gbdist.backends.graph_reference`,
docs/graph_api.md "Types"):

* ``W``, the accumulator type: D, except bool (``int`` holding 0/1, so that atomics
  exist) and float32 with ``acc64`` (double: the one documented departure);
* ``M``, the type operands are loaded into (``load``: GraphBLAS's typecast into D first)
  and formulas see: D itself for int32/int64 — formulas printed by
  :class:`.graph_printer.IntCudaPrinter` (integer nodes wrap like C through ``kernels/graph_types.cuh``,
  division and other float nodes in double, a float result cast saturating); ``float``
  for float32 work, else ``double``, with formulas printed by
  :class:`.graph_printer.GraphCudaPrinter`. On bool the formula runs on 0/1 in
  double and a result is ``value != 0``, so plus is or, minus xor.

``KIND`` selects the atomic ⊕: 1 plus (atomicAdd, wrapping on integers), 2 min and 3 max
(atomicMin/atomicMax on integers, a compare-and-swap loop on floats; on bool, plus is max
on 0/1), 4 any (a plain store), 0 any other monoid (compare-and-swap loop with ``add``).

Max and min on floats are C's fmax/fmin (``gb_fmax``/``gb_fmin`` of
``kernels/graph_types.cuh``: fmaxf/fmax, fminf/fmin), as SuiteSparse's MAX/MIN and the
reference: a NaN argument is ignored. So is every ``Max``/``Min`` node of a printed
formula (:class:`.graph_printer.GraphCudaPrinter`). The float atomic max/min is the CAS loop over
``add``: a NaN in the accumulator gives way to the first number, a NaN candidate leaves
a number in place (``fmax(acc, NaN) = acc``: the loop returns without a swap).
"""
from __future__ import annotations

import hashlib

import numpy as np

from ...errors import BackendError, InputError
from ...resources import read

CTYPES = {np.dtype(np.bool_): "bool", np.dtype(np.int32): "int", np.dtype(np.int64): "long long",
          np.dtype(np.float32): "float", np.dtype(np.float64): "double"}
INDEX_CTYPES = {np.dtype(np.int32): "int", np.dtype(np.int64): "long long"}

# Shared-memory SpGEMM bins: (table slots S, warps per row, rows per block); a bin takes the
# rows of at most S / 2 columns. The tables are dynamic shared memory (S = 16384 with 8-byte
# values: 192 KiB, one block an SM); S / (32 * warps) <= 16 keeps the numeric pass's sort in
# registers (64 a thread).
# The first ONE_LAUNCH bins have 256-thread blocks and run in one launch per pass
# (gb_spgemm_binned switches on exactly these; issue 30); the larger ones one launch each.
SHARED_BINS = ((32, 1, 8), (64, 1, 8), (128, 1, 8), (256, 1, 8), (512, 8, 1), (1024, 8, 1),
               (2048, 8, 1), (4096, 16, 1), (8192, 16, 1), (16384, 32, 1))
ONE_LAUNCH = 7
# SpMV bins: rows of degree <= bound get G lanes each; longer rows a 256-thread block. The
# one-launch kernel gb_spmv_binned switches on these four G values (kernels/graph_kernels.cuh).
SPMV_BINS = ((4, 1), (16, 4), (64, 16), (1024, 32))
# The SpMV's row tiles (gb_spmv_stream): rows whose merge coordinate Ap[i] + i falls in one
# tile of this many go to one 256-thread block, which stages up to 2 * SPMV_TILE products
# in shared memory (16 KiB of float64 for 1024).
SPMV_TILE = 1024
SPMV_TILES = (1024, 2048)  # the tile sizes benchmarks/graph_gpu.py compares


def ctype(dtype, what: str = "values") -> str:
    dt = np.dtype(dtype)
    if dt not in CTYPES:
        raise InputError(f"the CUDA graph kernels do not support these {what}",
                         expected="bool, int32, int64, float32 or float64", got=str(dt),
                         hint="convert the data with .astype(...) first")
    return CTYPES[dt]


def index_ctype(dtype) -> str:
    dt = np.dtype(dtype)
    if dt not in INDEX_CTYPES:
        raise InputError("the CUDA graph kernels need int32 or int64 indices", got=str(dt))
    return INDEX_CTYPES[dt]


def work_dtype(out_dtype, acc64: bool = False) -> np.dtype:
    """The accumulator dtype for the domain ``out_dtype``."""
    dt = np.dtype(out_dtype)
    ctype(dt, "result types")
    if dt == np.bool_:
        return np.dtype(np.int32)
    if dt == np.float32 and acc64:
        return np.dtype(np.float64)
    return dt


def monoid_kind(monoid, domain=None) -> int:
    """1 plus, 2 min, 3 max, 4 any, 0 anything else (see the module docstring). On bool,
    plus (or) is max on 0/1: an atomicMax, which cannot overflow as a count could. Min and
    max are found by the formula's structural text (the op key's), not by sympy."""
    if monoid.op.name == "any":
        return 4
    if monoid.invertible:
        return 3 if domain is not None and np.dtype(domain) == np.bool_ else 1
    text = monoid.op.key[2]
    if text == _formula_text("min"):
        return 2
    if text == _formula_text("max"):
        return 3
    return 0


_TEXTS: dict = {}


def _formula_text(name: str) -> str:
    """The structural text of the built-in op ``name``'s formula (min: Min(x, y); times: x*y,
    whichever order it was written in: sympy's ordered tree)."""
    t = _TEXTS.get(name)
    if t is None:
        from ...algebra import ops
        t = _TEXTS[name] = getattr(ops, name).key[2]
    return t


def _int_limit(ct: str, positive: bool) -> str:
    if ct == "int":
        return "2147483647" if positive else "(-2147483647 - 1)"
    return "9223372036854775807LL" if positive else "(-9223372036854775807LL - 1LL)"


def _int_literal(v: int, ct: str) -> str:
    info = np.iinfo(np.int32 if ct == "int" else np.int64)
    if v == info.min:
        return _int_limit(ct, False)
    return f"(({ct}){int(v)}LL)"


def nan_identity(monoid, work: np.dtype) -> bool:
    """Whether the accumulator of ⊕ starts at NaN rather than at its ±inf identity: min
    and max on floats are fmin/fmax, for which NaN is the identity (fmax(NaN, x) = x), so a
    row whose terms are all NaN stays NaN, as SuiteSparse (which starts from the first
    term) gives, where starting at -inf would give -inf."""
    return np.dtype(work).kind == "f" and monoid_kind(monoid) in (2, 3)


def source(functor_src: str) -> str:
    """One translation unit: the prelude, the domain helpers, the functor, the graph
    kernel templates."""
    return "\n".join([read("kernels", "gbdist.cuh"), read("kernels", "graph_types.cuh"),
                      functor_src, read("kernels", "graph_kernels.cuh"),
                      read("kernels", "graph_symmetric.cuh")])


def key(src: str) -> str:
    return "graph-" + hashlib.sha256(src.encode()).hexdigest()[:24]


def spgemm_names(I: str, TA: str, TB: str, mask: int) -> tuple[str, ...]:
    """Every SpGEMM kernel for one (index, A value, B value, mask mode) combination."""
    out = []
    for numeric in ("false", "true"):
        out.append(binned_name(I, TA, TB, numeric == "true", mask))
        if numeric == "true":
            out.append(binned_name(I, TA, TB, True, mask, esc=True))
        for S, wpr, rpb in SHARED_BINS[ONE_LAUNCH:]:
            out.append(shared_name(I, TA, TB, S, wpr, rpb, numeric == "true", mask))
        out += [global_name(I, TA, TB, numeric == "true", mask, dense) for dense in (False, True)]
    return tuple(out)


def _b(flag: bool) -> str:
    return "true" if flag else "false"


def binned_name(I, TA, TB, numeric: bool, mask: int, esc: bool = False) -> str:
    """The one-launch kernel of the first ONE_LAUNCH shared bins; ``esc``: a numeric row of
    at most 64 products in a bin of at most 128 slots sorted in a warp's registers
    (``gb_esc_row``) instead of a table."""
    return f"gb_spgemm_binned<GbF, {I}, {TA}, {TB}, {_b(numeric)}, {mask}, {_b(esc)}>"


def shared_name(I, TA, TB, S, wpr, rpb, numeric: bool, mask: int) -> str:
    """A larger shared bin's kernel."""
    return f"gb_spgemm_shared<GbF, {I}, {TA}, {TB}, {S}, {wpr}, {rpb}, {_b(numeric)}, {mask}>"


def global_name(I, TA, TB, numeric: bool, mask: int, dense: bool = False) -> str:
    """The global-table kernel; ``dense``: a slot per result column, rows written in order."""
    return f"gb_spgemm_global<GbF, {I}, {TA}, {TB}, {_b(numeric)}, {mask}, {_b(dense)}>"


def spmv_name(I: str, TA: str, TX: str, comp: bool, csum: bool = False, tile: int = None) -> str:
    """The SpMV ``spmv`` launches (row tiles of ``tile`` merge coordinates, default
    SPMV_TILE); ``comp``: complemented mask; ``csum``: compensated sums."""
    return (f"gb_spmv_stream<GbF, {I}, {TA}, {TX}, {'true' if comp else 'false'}, "
            f"{'true' if csum else 'false'}, {int(tile or SPMV_TILE)}>")


SPMV_GROUPS = (2, 4, 8, 16, 32)  # lanes a row of the in-order SpMV (gb_spmv_rows)


def spmv_rows_name(I: str, TA: str, TX: str, comp: bool, csum: bool, group: int) -> str:
    """The in-order SpMV (``group`` lanes a row, rows in order; regular rows: the planner
    rule :func:`gbdist.compiler.spmv_choice.choose_full`)."""
    if group not in SPMV_GROUPS:
        raise BackendError("the in-order SpMV takes a power of two lanes a row",
                           expected=" | ".join(map(str, SPMV_GROUPS)), got=repr(group))
    return (f"gb_spmv_rows<GbF, {I}, {TA}, {TX}, {'true' if comp else 'false'}, "
            f"{'true' if csum else 'false'}, {int(group)}>")


def spmv_binned_name(I: str, TA: str, TX: str, comp: bool, csum: bool = False) -> str:
    """The degree-binned one-launch SpMV (row ids per bin; issue 12's kernel, kept for
    comparison in benchmarks/graph_gpu.py)."""
    return (f"gb_spmv_binned<GbF, {I}, {TA}, {TX}, {'true' if comp else 'false'}, "
            f"{'true' if csum else 'false'}>")



def spmv_symmetric_name(I: str, TA: str, TX: str, comp: bool) -> str:
    return f"gb_spmv_symmetric<GbF, {I}, {TA}, {TX}, {'true' if comp else 'false'}>"


def sym_rows_name(I: str, TA: str, TX: str, G: int, tile: bool, passes: int) -> str:
    """The in-order symmetric SpMV (``kernels/graph_symmetric.cuh``): G lanes a row."""
    return f"gb_spmv_sym_rows<GbF, {I}, {TA}, {TX}, {G}, {'true' if tile else 'false'}, {passes}>"


def sym_fixed_names(I: str, TA: str, TX: str, G: int, tile: bool, passes: int, TY: str,
                    ) -> tuple[str, ...]:
    """The reproducible symmetric SpMV (fixed-point sums), its finish and max|x|."""
    return (f"gb_spmv_sym_fixed<GbF, {I}, {TA}, {TX}, {G}, {'true' if tile else 'false'}, {passes}>",
            f"gb_sym_fixed_finish<{TY}>", f"gb_maxabs<{TX}>")


def sym_offsets_name(I: str, TA: str, TX: str, csum: bool) -> str:
    """The symmetric SpMV without atomics for a U on few diagonals (a fixed order)."""
    return f"gb_spmv_sym_offsets<GbF, {I}, {TA}, {TX}, {'true' if csum else 'false'}>"


def sym_dia_names(I: str, TA: str, TX: str, csum: bool) -> tuple[str, str]:
    """U by diagonals (``kernels/graph_symmetric.cuh``): its build from the CSR, and the
    symmetric SpMV on it (the offsets kernel's order, coalesced loads)."""
    return (f"gb_sym_dia_build<{I}, {TA}>",
            f"gb_spmv_sym_dia<GbF, {TA}, {TX}, {'true' if csum else 'false'}>")


def spgemm_dia_names(TA: str, TB: str) -> tuple[str, str]:
    """The SpGEMM of two matrices stored by diagonals (``kernels/graph_symmetric.cuh``): its
    counting pass and its filling pass."""
    return (f"gb_spgemm_dia<GbF, {TA}, {TB}, false>", f"gb_spgemm_dia<GbF, {TA}, {TB}, true>")


def spmspv_name(I: str, TA: str, TU: str, TI: str, comp: bool) -> str:
    return f"gb_spmspv<GbF, {I}, {TA}, {TU}, {TI}, {'true' if comp else 'false'}>"


def segment_name(P: str, TV: str) -> str:
    return f"gb_segment_reduce<GbF, {P}, {TV}>"


def standalone(functor_src: str, names) -> str:
    """A source nvcc compiles on its own: every kernel of ``names`` explicitly instantiated
    (for the compile tests; at run time RawModule's name_expressions do this)."""
    refs = ",\n  ".join(f"(void*)&{n}" for n in names)
    return f"{source(functor_src)}\n[[maybe_unused]] void* const gb_instances[] = {{\n  {refs}}};\n"
