"""The scatter walk and the fused kNN kernel of the generated modules (see ``codegen.py``).

Split from ``codegen.py``, which writes the rest of each module: the walk of the right
operand's columns shared by ``gb_fused`` and ``gb_knn`` (unsigned indices, unrolled),
``gb_knn`` itself (products, epilogue, proven d(a, a) and top-k in one pass per row),
and which plans may take their dense columns as a matrix product (``_gemm``).
"""
from __future__ import annotations

import numpy as np

from ...algebra.evaluate import apply_unary
from ...errors import BackendError
from .printer import float_literal, formula


def _comb(ufunc, a: str, b: str) -> str:
    if ufunc is np.add:
        return f"({a} + {b})"
    if ufunc is np.multiply:
        return f"({a} * {b})"
    if ufunc is np.maximum:
        return f"gb_max({a}, {b})"
    if ufunc is np.minimum:
        return f"gb_min({a}, {b})"
    raise BackendError("the compiled CPU backend has no kernel for this monoid", got=repr(ufunc))


class _Writer:
    def __init__(self):
        self.lines: list[str] = []
        self.shift = 0  # added to every indent (the kernel body is written one level deep)

    def __call__(self, indent: int, text: str):
        self.lines.append("    " * max(0, indent + self.shift) + text)

    def text(self) -> str:
        return "\n".join(self.lines) + "\n"


def _gemm(products: list, groups: dict) -> list:
    """Each product step's expansion ((φ, ψ), ...) when all steps are expanded plus-scatters
    over one operand pair whose terms vanish at 0 (φ_r(0) = ψ_r(0) = 0: a dense block
    holding 0 for an unstored entry then adds nothing); else []."""
    if len(groups) != 1 or not products:
        return []
    out = []
    for step, _lu, _ru, how in products:
        node = step.node
        if how != "scatter" or node.add.ufunc is not np.add or not node.expansion:
            return []
        for pair in node.expansion:
            for op in pair:
                with np.errstate(all="ignore"):
                    if float(apply_unary(op, np.zeros(1))[0]) != 0.0:
                        return []
        out.append(tuple(node.expansion))
    return out


UNROLL = 4  # entries of a column per step of the walk (measured ~12% faster than 1 on KOS)


def _start_arrays(w: _Writer, indent: int, rus, flag: str) -> None:
    """``start<ru>[k]``: the first entry of column k of the right operand ``ru`` (CSC) in a
    row >= r0, when ``flag`` (a kernel argument) is true; a one-cell array otherwise. A
    bisection written out: with ``np.searchsorted`` on a slice a chebyshev kNN's first call
    (empty caches) took 1.10x the time of the tree before the upper tiles, with this 1.02x."""
    for ru in rus:
        w(indent, f"start{ru} = np.empty(rcsc_p{ru}.shape[0] if {flag} else 1, np.int64)")
        w(indent, f"if {flag}:")
        w(indent + 1, f"for k in range(rcsc_p{ru}.shape[0] - 1):")
        w(indent + 2, f"blo = rcsc_p{ru}[k]")
        w(indent + 2, f"bhi = rcsc_p{ru}[k + 1]")
        w(indent + 2, "while blo < bhi:")
        w(indent + 3, "bmid = (blo + bhi) // 2")
        w(indent + 3, f"if rcsc_i{ru}[bmid] < r0:")
        w(indent + 4, "blo = bmid + 1")
        w(indent + 3, "else:")
        w(indent + 4, "bhi = bmid")
        w(indent + 2, f"start{ru}[k] = blo")


def _column_start(w: _Writer, indent: int, ru: int, q: str, flag) -> None:
    """``q``, ``q1``: the entries of column k of ``ru`` to walk: all of them, or (``flag``
    True, or the name of a kernel argument that is true) from ``start<ru>[k]``, the first
    in a row >= i, advanced as i grows (rows in increasing order per call), so only j >= i."""
    w(indent, f"q1 = rcsc_p{ru}[k + 1]")
    if flag is False:
        w(indent, f"{q} = rcsc_p{ru}[k]")
        return
    if flag is not True:
        w(indent, f"{q} = rcsc_p{ru}[k]")
        w(indent, f"if {flag}:")
        indent += 1
    w(indent, f"{q} = start{ru}[k]")
    w(indent, f"while {q} < q1 and rcsc_i{ru}[{q}] < i:")
    w(indent + 1, f"{q} += 1")
    w(indent, f"start{ru}[k] = {q}")


def _scatter_walk(w: _Writer, indent: int, groups: dict, start) -> None:
    """The scatter of row i over the right operand's columns (one walk per operand pair),
    ``UNROLL`` entries of a column at a time (their rows are distinct, so each sum gets
    the same terms in the same order). Indices are read as unsigned: Numba then emits no
    negative-index wraparound (measured 25% of the walk). ``start`` (True, or the name of
    a kernel argument): only j >= i (see :func:`_column_start`)."""
    for (lu, ru), members in groups.items():
        w(indent, f"for p in range(lcsr_p{lu}[i], lcsr_p{lu}[i + 1]):")
        w(indent + 1, f"k = lcsr_i{lu}[p]")
        w(indent + 1, f"x = np.float64(lcsr_v{lu}[p])")
        _column_start(w, indent + 1, ru, "q", start)

        def step_values(ind: int, tag: str) -> None:
            for s, step in members:
                w(ind, f"t{s}{tag} = {_scatter_value(step.node)}")

        def combine(ind: int, tag: str) -> None:
            for s, step in members:
                if step.node.add.ufunc is np.add:
                    w(ind, f"acc{s}[j{tag}] += t{s}{tag}")
                else:
                    w(ind, f"acc{s}[j{tag}] = {_comb(step.node.add.ufunc, f'acc{s}[j{tag}]', f't{s}{tag}')}")

        w(indent + 1, f"while q + {UNROLL} <= q1:")
        for u in range(UNROLL):
            w(indent + 2, f"j_{u} = np.uint64(rcsc_i{ru}[q + {u}])")
            w(indent + 2, f"y = np.float64(rcsc_v{ru}[q + {u}])")
            step_values(indent + 2, f"_{u}")
        for u in range(UNROLL):
            combine(indent + 2, f"_{u}")
        w(indent + 2, f"q += {UNROLL}")
        w(indent + 1, "while q < q1:")
        w(indent + 2, f"j_ = np.uint64(rcsc_i{ru}[q])")
        w(indent + 2, f"y = np.float64(rcsc_v{ru}[q])")
        step_values(indent + 2, "_")
        combine(indent + 2, "_")
        w(indent + 2, "q += 1")


def _scatter_value(node) -> str:
    """⊗ of a scatter step on (x, y): the expansion Σ φ_r(x)·ψ_r(y) where there is one."""
    if node.expansion and node.add.ufunc is np.add:
        return " + ".join(f"({formula(phi.formula, {'x': 'x'})}) * ({formula(psi.formula, {'x': 'y'})})"
                          for phi, psi in node.expansion)
    return formula(node.mul.formula)


def _knn_kernel(w: _Writer, names: list, products: list, groups: dict, per_row, per_col,
                final: str) -> None:
    """``gb_knn``: the fused kernel of a plan whose products are all scatters (the dot
    family), selecting instead of writing a tile. Per left row i of [r0, r1): the scatter,
    the epilogue's value for each j (rounded to float32 when ``f32``, as the tile would be),
    the proven d(a, a) written over finite values at the pairs ``ovj[ovp[i]:ovp[i + 1]]``
    (equal rows), then each (value, j) inserted into row i's sorted k-list (``bd``, ``bi``).
    ``half`` (a self-join under a symmetric metric): only j >= i is computed, and each
    (value, i) with j > i is also inserted into column j's k-list (``cd``, ``ci``, counts
    ``cc``: the calling worker's own lists, merged afterwards). Lists are pre-filled with
    placeholders that sort last."""
    w(0, "")
    w(0, "@njit(**OPT)")
    rus = sorted({ru for (_lu, ru) in groups})
    sig = ", ".join(names + ["colred", "rowred", "K", "Kw", "n", "half", "f32", "ovp", "ovj",
                             "value", "kk", "bd", "bi", "cd", "ci", "cc", "base", "hb", "br0",
                             "bc0", "r0", "r1"])
    w(0, f"def gb_knn({sig}):")
    w(1, "Kf = np.float64(K)")
    w(1, f"acc = np.empty(({len(products)}, max(n, 1)), np.float64)")
    for s, (step, *_r) in enumerate(products):
        w(1, f"acc{s} = acc[{s}]")
        w(1, "for j in range(n):")
        w(2, f"acc{s}[j] = {float_literal(step.node.add.identity_value)}")
    for name, src in per_col:
        w(1, f"{name} = np.empty(max(n, 1), np.float64)")
        w(1, "for j in range(n):")
        w(2, f"{name}[j] = {src}")
    _start_arrays(w, 1, rus, "half")  # the first entry of each column in a row >= r0
    w(1, "for i in range(r0, r1):")
    # hb: the products over the dense columns start the sums (base holds rows br0.. and
    # columns bc0.. of them)
    w(2, "if hb:")
    w(3, "lo0 = i if half else 0")
    for s, _p in enumerate(products):
        w(3, "for j in range(lo0, n):")
        w(4, f"acc{s}[j] = base[{s}, i - br0, j - bc0]")
    w(2, "if half:")
    _scatter_walk(w, 3, groups, start=True)
    w(2, "else:")
    _scatter_walk(w, 3, groups, start=False)
    for name, src in per_row:
        w(2, f"{name} = {src}")
    # Candidates arrive in increasing index (j along a row; i along a column, the worker's
    # blocks being in order), so a tie with the k-th never enters: one comparison rejects
    # (v < k-th, or any number while the k-th is NaN) before gb_insert's full order. The
    # equal-row pairs of row i (ovj, sorted) are met in the same pass.
    w(2, "lo = i if half else 0")
    w(2, "ov = ovp[i]")
    w(2, "ov1 = ovp[i + 1]")
    w(2, "while ov < ov1 and ovj[ov] < lo:")
    w(3, "ov += 1")
    w(2, "bdi = bd[i]")
    w(2, "bii = bi[i]")
    w(2, "cnt = 0")
    w(2, "thr = NAN")
    w(2, "for j in range(lo, n):")
    w(3, f"v = {final}")
    for s, (step, *_r) in enumerate(products):
        w(3, f"acc{s}[j] = {float_literal(step.node.add.identity_value)}")
    w(3, "if f32:")
    w(4, "v = np.float64(np.float32(v))")
    w(3, "if ov < ov1 and ovj[ov] == j:")
    w(4, "ov += 1")
    w(4, "if math.isfinite(v):")
    w(5, "v = value")
    w(3, "if cnt < kk or v < thr or (thr != thr and v == v):")
    w(4, "cnt = gb_insert(bdi, bii, cnt, kk, v, np.int64(j))")
    w(4, "if cnt == kk:")
    w(5, "thr = bdi[kk - 1]")
    w(3, "if half and j != i:")
    w(4, "c = cc[j]")
    w(4, "tc = cd[j, kk - 1]")
    w(4, "if c < kk or v < tc or (tc != tc and v == v):")
    w(5, "cc[j] = gb_insert(cd[j], ci[j], c, kk, v, np.int64(i))")
    w(1, "return 0")
