"""CI guard for the CUDA graph kernels (issue 12): the functors printed from the ops'
formulas, and every kernel instantiation the host code launches, compile for sm_90 with
nvcc (no GPU needed); ptxas checks the shared-memory tables fit."""
import os
import shutil
import subprocess
import tempfile

import numpy as np
import pytest

import gbdist as gb
from gbdist.algebra.formulas import X, Y
from gbdist.algebra.ops import as_monoid, make_op
from gbdist.backends.cuda import graph_codegen as gc
from gbdist.backends.cuda import graph_functor as gf

NVCC = shutil.which("nvcc")
SR = gb.semirings
PROBOR = make_op("probor", X + Y - X * Y)


def _nvcc(source: str, mode: str = "--ptx"):
    with tempfile.TemporaryDirectory() as d:
        src = os.path.join(d, "k.cu")
        with open(src, "w") as f:
            f.write(source)
        return subprocess.run([NVCC, mode, "-arch=sm_90", "-std=c++17", "-o", os.path.join(d, "k.out"), src],
                              capture_output=True, text=True)


def _all_names(out, mask: int, itype="int"):
    """What the host launches for one functor: SpGEMM (one mask mode), SpMV, SpMSpV, segments."""
    tv = gc.CTYPES[np.dtype(out)]
    names = gc.spgemm_names(itype, tv, "bool", mask)
    names += (gc.spmv_name(itype, tv, "double", mask == 2), gc.spmv_name(itype, tv, "float", mask == 1, True),
              gc.spmv_name(itype, tv, "double", mask == 1, mask == 2, 2048),
              gc.spmv_binned_name(itype, tv, "double", mask == 2),
              *(gc.spmv_rows_name(itype, tv, "double", mask == 2, g == 8, g) for g in gc.SPMV_GROUPS),
              gc.spmv_symmetric_name(itype, tv, "double", mask == 2))
    names += (gc.spmspv_name(itype, tv, "float", "int", mask == 1),
              gc.segment_name("long long", tv), gc.segment_name("int", "bool"))
    return names


COMPILE = [
    (np.float64, "plus_times", 0), (np.float32, "min_plus", 1), (np.int32, "max_times", 2),
    (np.int64, "min_plus", 0), (np.bool_, "lor_land", 1), (np.int32, "plus_pair", 2),
    (np.float64, "any_pair", 0), (np.float64, "probor", 2), (np.bool_, "max_min", 0),
]


@pytest.mark.nvcc
@pytest.mark.parametrize("out,name,mask", COMPILE, ids=[f"{np.dtype(o).name}-{n}-m{m}" for o, n, m in COMPILE])
def test_graph_kernels_compile(out, name, mask):
    sr = gb.semiring(gb.ops.times, PROBOR) if name == "probor" else SR[name]
    src = gc.standalone(gf.functor(sr.mul, sr.add, out), _all_names(out, mask, "int" if mask != 1 else "long long"))
    r = _nvcc(src)
    assert r.returncode == 0, r.stderr[-3000:]


@pytest.mark.nvcc
def test_widest_tables_fit_shared_memory():
    """Every SpGEMM instantiation with 8-byte accumulators (the tables are dynamic shared
    memory, sized at launch) builds to a cubin, with float32 accumulating in float64 too."""
    for out, acc64 in ((np.int64, False), (np.float32, True)):
        src = gc.standalone(gf.functor(SR.plus_times.mul, SR.plus_times.add, out, acc64),
                            gc.spgemm_names("long long", "double", "float", 2))
        r = _nvcc(src, "-cubin")
        assert r.returncode == 0, r.stderr[-3000:]


def test_functor_types_and_atomics():
    f = gf.functor(SR.min_plus.mul, SR.min_plus.add, np.int32)
    # evaluated in the int32 domain: wrapping addition, saturating casts on load
    assert "typedef int W;" in f and "typedef int M;" in f and "KIND = 2;" in f
    assert "gb_wadd<W>(x, y)" in f and "gb_to_int<M>(v)" in f
    assert "return ((int)2147483647LL);" in f  # +inf identity of min as the int32 maximum
    f = gf.functor(SR.max_plus.mul, SR.max_plus.add, np.int64)
    assert "KIND = 3;" in f and "(-9223372036854775807LL - 1LL)" in f
    f = gf.functor(SR.lor_land.mul, SR.lor_land.add, np.bool_)
    assert "typedef int W;" in f and "(W)((v) != (M)0)" in f and "KIND = 0;" in f
    f = gf.functor(SR.plus_times.mul, SR.plus_times.add, np.float32)
    assert "typedef float W;" in f and "typedef float M;" in f and "KIND = 1;" in f
    f = gf.functor(SR.plus_times.mul, SR.plus_times.add, np.float32, acc64=True)
    assert "typedef double W;" in f and "typedef double M;" in f
    f = gf.functor(SR.any_pair.mul, SR.any_pair.add, np.float64)
    assert "KIND = 4;" in f and "return b;" in f
    f = gf.functor(gb.ops.times, as_monoid(PROBOR), np.float64)
    assert "KIND = 0;" in f and "x*y" in f and "return cast(-x*y + x + y);" in f.replace("\n", " ").replace("    ", "")


def test_unsupported_types_are_typed_errors():
    with pytest.raises(gb.InputError):
        gf.functor(SR.plus_times.mul, SR.plus_times.add, np.complex64)
    with pytest.raises(gb.InputError):
        gc.index_ctype(np.int16)
    with pytest.raises(gb.InputError):
        gc.ctype(np.uint8)


def test_bins_cover_every_bound_once():
    sizes = [s for s, _, _ in gc.SHARED_BINS]
    assert sizes == sorted(sizes) and all(s & (s - 1) == 0 for s in sizes)
    for s, wpr, rpb in gc.SHARED_BINS:
        assert rpb == 1 or wpr == 1
        assert rpb * s * (4 + 8) <= 227 * 1024  # keys + 8-byte values: sm_90's dynamic shared limit
        assert 32 * wpr * rpb <= 1024
        assert s // (32 * wpr) <= 16  # table slots a thread holds in the numeric pass's sort
    # gb_spgemm_binned runs the first ONE_LAUNCH bins, 256-thread blocks, with these shapes
    src = gc.source("")
    for b, (s, wpr, rpb) in enumerate(gc.SHARED_BINS[:gc.ONE_LAUNCH]):
        assert 32 * wpr * rpb == 256
        assert rpb * s * (4 + 8) <= 24 * 1024  # a full SM of threads for the smallest bins too
        call = f"gb_spgemm_shared_rows<F, I, TA, TB, {s}, {wpr}, {rpb}, NUMERIC, MASK"
        esc = ", ESC>" if s <= 128 else ">"  # the warp-a-row bins of <= 64 bound: short rows in registers
        assert (f"case {b}: {call}{esc}" in src
                or (b == gc.ONE_LAUNCH - 1 and f"default: {call}{esc}" in src))
    assert f"constexpr int NB = {gc.ONE_LAUNCH};" in src
    # ... and finds a block's bin from these rows a block (gb_spgemm_block_bin)
    rpb = ", ".join(str(r) for _, _, r in gc.SHARED_BINS[:gc.ONE_LAUNCH])
    assert f"constexpr int rpb[NB] = {{{rpb}}};" in src
    bounds = [b for b, _ in gc.SPMV_BINS]
    assert bounds == sorted(bounds)
    # gb_spmv_binned switches on exactly these lane counts, then the block bin (NB = 5)
    assert tuple(g for _, g in gc.SPMV_BINS) == (1, 4, 16, 32)
    assert "constexpr int NB = 5;" in gc.source("")


@pytest.mark.nvcc
def test_bin_kernels_compile():
    from gbdist.resources import read
    r = _nvcc(read("kernels", "graph_bins.cuh") + "\n[[maybe_unused]] void* const gb_b[] = "
              "{(void*)&gb_spgemm_bound<int>, (void*)&gb_spgemm_bound<long long>, "
              "(void*)&gb_compact_rows<unsigned int>, (void*)&gb_compact_rows<unsigned long long>, "
              "(void*)&gb_row_span<int>, (void*)&gb_row_span<long long>};\n")
    assert r.returncode == 0, r.stderr[-3000:]


def test_stored_functor_is_the_printed_one_read_back(monkeypatch, tmp_path):
    """graph_functor.stored_functor: the first call prints the functor and stores it; a later
    one (this process's printer made to fail) reads the same text back from the record; a
    record damaged to other text, or other ops, print again. Keys: the ops and the domain."""
    from gbdist.backends.cuda import graph_printer
    monkeypatch.setenv("GBDIST_CACHE_DIR", str(tmp_path))
    cases = [(SR.plus_times, np.float64, False), (SR.min_plus, np.int32, False),
             (SR.plus_times, np.float32, False), (SR.lor_land, np.bool_, False)]
    first = [gf.stored_functor(sr.mul, sr.add, dt, acc) for sr, dt, acc in cases]
    assert first == [gf.functor(sr.mul, sr.add, dt, acc) for sr, dt, acc in cases]
    assert len(set(first)) == len(cases)
    printed = []
    real = graph_printer.functor

    def spy(*a):
        printed.append(a)
        return real(*a)
    monkeypatch.setattr(graph_printer, "functor", spy)
    assert [gf.stored_functor(sr.mul, sr.add, dt, acc) for sr, dt, acc in cases] == first
    assert not printed
    for f in (tmp_path / "programs").glob("*.json"):  # damaged: a record that is not a functor
        f.write_text(f.read_text().replace("struct GbF {", "int main() {"))
    assert gf.stored_functor(SR.plus_times.mul, SR.plus_times.add, np.float64) == first[0]
    assert len(printed) == 1


def test_monoid_kinds_without_sympy():
    """monoid_kind reads min and max from the formula's structural text: a user op written
    min(y, x) is min, a max written over (y, x) is max, a near miss is neither."""
    import sympy as sp
    mn = as_monoid(make_op("mymin", sp.Min(Y, X)))
    mx = as_monoid(make_op("mymax", sp.Max(Y, X)))
    assert gc.monoid_kind(mn) == 2 and gc.monoid_kind(mx) == 3
    assert gc.monoid_kind(gb.semirings.min_plus.add) == 2 and gc.monoid_kind(gb.semirings.max_plus.add) == 3
    assert gc.monoid_kind(as_monoid(PROBOR)) == 0
    assert gc.monoid_kind(gb.semirings.plus_times.add) == 1
