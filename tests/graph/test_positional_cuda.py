"""The CUDA path of products over a positional ⊗: the algebra lowers it to ``first`` /
``second`` over an index-valued (int64) operand, so the CUDA graph kernels run it with the
functor printed from that value op. Every lowered positional semiring's functor, with
every kernel instantiation the host launches, compiles for sm_90 with nvcc (no GPU
needed); the values on a GPU are checked by test_graphblas_features.py's ``cuda``
kernel set (marked gpu) and by :func:`test_positional_on_device` here."""
from __future__ import annotations

import os
import shutil
import subprocess
import tempfile

import numpy as np
import pytest

import gbdist as gb
from gbdist import graph as gr
from gbdist.algebra import positional as P
from gbdist.algebra.semirings import Semiring

NVCC = shutil.which("nvcc")


def _compile(src):
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "k.cu")
        with open(path, "w") as f:
            f.write(src)
        return subprocess.run([NVCC, "--ptx", "-arch=sm_90", "-std=c++17", "-o",
                               os.path.join(d, "k.ptx"), path], capture_output=True, text=True)


def _names(gc, tv, mask, itype="int"):
    names = gc.spgemm_names(itype, tv, tv, mask)
    names += (gc.spmv_name(itype, tv, tv, mask == 2), gc.spmspv_name(itype, tv, tv, "int", mask == 1))
    return names


@pytest.mark.nvcc
@pytest.mark.skipif(NVCC is None, reason="needs nvcc")
@pytest.mark.parametrize("name,mask", [("any_firsti", 0), ("min_secondj", 1),
                                       ("max_firstj1", 2), ("plus_secondi", 0),
                                       ("times_firsti1", 1)])
def test_lowered_positional_semirings_compile(name, mask):
    """Each ⊕ once, with ⊗ lowered to first or second (what the functor depends on)."""
    from gbdist.backends.cuda import graph_codegen as gc
    from gbdist.backends.cuda import graph_functor as gf
    sr = gb.semirings[name]
    low = P.lower(sr.mul)
    value = Semiring.stored(low.value_mul, sr.add, None)
    r = _compile(gc.standalone(gf.functor(value.mul, value.add, np.int64),
                               _names(gc, "long long", mask)))
    assert r.returncode == 0, r.stderr[-3000:]


def test_lowering_is_the_algebras():
    """firsti reads A's row, secondj B's column; k (firstj = secondi: one function, equal
    ops) the inner index of whichever operand it is lowered onto; ``…1`` adds one; a
    formula mixing both operands' indices is refused."""
    i = np.array([0, 3, 5])
    j = np.array([2, 1, 4])
    for name, op in P.POSITIONAL.items():
        low = P.lower(op)
        assert low.value_mul.name == low.side
        base = name.rstrip("1")
        reads = {"firsti": "i", "secondj": "j"}.get(base, "k")
        if reads == "i":
            assert low.side == "first"
        if reads == "j":
            assert low.side == "second"
        # the operand's own (row, column) = A(i, k) or B(k, j)
        row_of_operand = reads == "i" or (reads == "k" and low.side == "second")
        want = (i if row_of_operand else j) + (1 if name.endswith("1") else 0)
        assert np.array_equal(low.index_op.evaluate(None, i, j, 0), want), name
    with pytest.raises(gb.DefinitionError):
        P.PositionalOp.make("mixed", ("Add", ("Symbol", "i", False), ("Symbol", "j", False)))


@pytest.mark.gpu
def test_positional_on_device():
    from gbdist.backends.cuda import available
    if not available():
        pytest.skip("needs CuPy and an NVIDIA GPU")
    rng = np.random.default_rng(0)
    import scipy.sparse as sps
    A = gb.Matrix(sps.random(300, 200, 0.05, random_state=1, format="csr"))
    B = gb.Matrix(sps.random(200, 100, 0.05, random_state=2, format="csr"))
    u = gb.Vector.from_coo(rng.choice(200, 50, replace=False), rng.random(50), 200)
    for name in ("min_firsti", "max_secondj", "plus_firstj", "min_secondi1"):
        sr = gb.semirings[name]
        host_c = gr.mxm(A, B, sr, backend="reference")
        dev_c = gr.mxm(A.to_device(), B.to_device(), sr).to_host()
        assert dev_c.isequal(host_c) and dev_c.dtype == np.int64
        assert gr.mxv(A.to_device(), u.to_device(), sr).to_host().isequal(
            gr.mxv(A, u, sr, backend="reference"))
