"""Which kernel an SpMV runs (issue 30). For a matrix the user declares symmetric
(:func:`choose`): the full CSR, or the symmetric kernel that reads the upper triangle once
and uses each stored entry twice. For the full CSR on the device (:func:`choose_full`): the
row-tile kernel or the in-order kernel, and its lanes a row.

The user says the matrix is symmetric (``gr.mxv(A, u, sr, symmetric=...)``): ``"upper"``,
A holds only the upper triangle (diagonal included) of a symmetric matrix; ``True``, A is
the full symmetric matrix (checked once per matrix version). Without that, no rule looks
at symmetry (checking every product's operand would cost a transpose).

The rule reads the row-degree statistics of the full matrix (:func:`row_statistics`,
computed once per matrix version) and the call's shape:

* the symmetric kernel needs the device, no mask, every entry of u present and a monoid
  that is not ``any`` (the in-order kernel, ``kernels/graph_symmetric.cuh``); elsewhere
  the full CSR runs (``"upper"`` builds it once: U + Uᵀ, the diagonal once);
* it is picked when the rows are regular, as a stencil's or a band's: degree coefficient
  of variation <= :data:`REGULAR_CV` and longest row <= :data:`LONGEST_OVER_MEAN` times
  the mean. On the random power-law graphs of benchmarks/graph_gpu.py the symmetric
  kernel measured 2x slower than the full CSR (issue 30): atomics on hub vertices and
  rows that a thread per row cannot balance; on 7-point Poisson 3D the seed's kernel
  measured 0.70x cuSPARSE on the full matrix.

The full-CSR rule (:func:`choose_full`, the CUDA set's ``spmv`` on every matrix, its row
statistics computed once per matrix) reads the same statistics: regular rows (as above)
take the in-order kernel (``gb_spmv_rows``: G lanes a row, rows in order, no tile starts,
no staging), G the power of two of :data:`ROWS_GROUPS` for the mean row length; other
matrices the row-tile kernel (``gb_spmv_stream``), which balances uneven rows. On one
H200 (docs/benchmarks.md, "In-order full-CSR SpMV") the in-order kernel with 2 lanes a
row took 0.72-0.83x cuSPARSE on 7-point Poisson 3D (256³-512³) and with 4 lanes
0.75-0.79x on the 27-point stencil (128³, 192³), where the row-tile kernel took 0.88-1.06x.
"""
from __future__ import annotations

from dataclasses import dataclass

REGULAR_CV = 0.5
LONGEST_OVER_MEAN = 4.0
# (mean row length up to, lanes a row) of the in-order full-CSR SpMV; longer rows: 32. The
# lanes swept on one H200 (2026-11-27, G = 2..32, docs/benchmarks.md "In-order full-CSR
# SpMV"): 2 lanes best at 7.0 entries a row (7-point Poisson, 256³-512³: 0.72-0.83x
# cuSPARSE, 4 lanes 0.75-0.94x), 4 at 26.6 (27-point, 128³ and 192³: 0.75-0.79x, 8 lanes
# 0.87-0.90x): about one lane per 4-7 entries. Between and beyond: the same proportion.
ROWS_GROUPS = ((12.0, 2), (48.0, 4), (96.0, 8), (192.0, 16))


@dataclass(frozen=True)
class SpmvChoice:
    """The kernel of one symmetric SpMV and why."""

    kernel: str  # "symmetric" (upper triangle, each entry twice) or "full" (full CSR);
    # choose_full: "rows" (in order, ``group`` lanes a row) or "stream" (row tiles)
    reason: str
    stats: tuple = ()  # (name, value) pairs the rule read
    group: int = 0  # lanes a row of the "rows" kernel

    def explain(self) -> str:
        lanes = f" ({self.group} lanes a row)" if self.group else ""
        lines = [f"spmv kernel: {self.kernel}{lanes}", f"  why: {self.reason}"]
        if self.stats:
            lines.append("  rows: " + ", ".join(f"{k} {v:.3g}" if isinstance(v, float) else f"{k} {v}"
                                                for k, v in self.stats))
        return "\n".join(lines)

    __str__ = explain


def row_statistics(degrees, xp) -> dict:
    """Mean, coefficient of variation and maximum of the full matrix's row degrees."""
    n = int(degrees.size)
    if n == 0:
        return {"rows": 0, "mean": 0.0, "cv": 0.0, "max": 0}
    d = degrees.astype(float)
    mean = float(d.mean())
    cv = float(d.std()) / mean if mean else 0.0
    return {"rows": n, "mean": mean, "cv": cv, "max": int(degrees.max())}


def regular(stats: dict) -> bool:
    return (stats["rows"] > 0 and stats["cv"] <= REGULAR_CV
            and stats["max"] <= LONGEST_OVER_MEAN * max(stats["mean"], 1.0))


def choose(stats: dict, *, on_device: bool, masked: bool, u_full: bool, any_monoid: bool) -> SpmvChoice:
    """The kernel for a product with a matrix the user declared symmetric."""
    shown = tuple((k, stats[k]) for k in ("rows", "mean", "cv", "max"))
    if not on_device:
        return SpmvChoice("full", "host data: the CPU kernels have no symmetric SpMV", shown)
    if masked or not u_full or any_monoid:
        why = ("a mask" if masked else "a vector with absent entries" if not u_full else "the any monoid")
        return SpmvChoice("full", f"{why}: the symmetric in-order kernel is for unmasked products "
                          "of a full vector under a monoid with an atomic", shown)
    if not regular(stats):
        return SpmvChoice("full", f"irregular rows (degree cv > {REGULAR_CV} or the longest row > "
                          f"{LONGEST_OVER_MEAN:g} x the mean): the symmetric kernel's atomics measured "
                          "2x slower than the full CSR on power-law graphs", shown)
    return SpmvChoice("symmetric", "regular rows (a stencil or band): the upper triangle read once, "
                      "each entry used twice (about half the bytes of the full CSR; float values "
                      "on few, filled diagonals are read by diagonals, without columns: "
                      "0.38-0.46x cuSPARSE's full product on the seed's stencils, one H200)", shown)


def lanes_for(mean: float) -> int:
    """The in-order kernel's lanes a row for rows of ``mean`` entries (:data:`ROWS_GROUPS`)."""
    for top, group in ROWS_GROUPS:
        if mean <= top:
            return group
    return 32


def choose_full(stats: dict) -> SpmvChoice:
    """The device kernel for a full-CSR SpMV: ``"rows"`` (in order, ``group`` lanes a row)
    for regular rows, else ``"stream"`` (row tiles)."""
    shown = tuple((k, stats[k]) for k in ("rows", "mean", "cv", "max"))
    if not regular(stats):
        return SpmvChoice("stream", f"irregular rows (degree cv > {REGULAR_CV} or the longest row > "
                          f"{LONGEST_OVER_MEAN:g} x the mean): row tiles balance them", shown)
    return SpmvChoice("rows", "regular rows (a stencil or band): rows in order, coalesced, no "
                      "tile starts or staging (0.72-0.83x cuSPARSE on the seed's stencils with "
                      "these lanes, the row tiles 0.88-1.06x; one H200)", shown, lanes_for(stats["mean"]))
