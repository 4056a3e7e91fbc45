"""CI guard for the in-order symmetric SpMV (issue 30, kernels/graph_symmetric.cuh): every
instantiation the host launches (each lane count, tiled or not; the fixed-point kernel, its
finish and max|x|) compiles for sm_90 with nvcc for several semirings and types (no GPU)."""
import os
import shutil
import subprocess
import tempfile

import numpy as np
import pytest

import gbdist as gb
from gbdist.backends.cuda import graph_codegen as gc
from gbdist.backends.cuda.graph_symmetric import exact_eligible, lanes

NVCC = shutil.which("nvcc")
SR = gb.semirings
CASES = [(np.float64, "plus_times", "int"), (np.float32, "min_plus", "long long"),
         (np.int32, "max_times", "int"), (np.bool_, "lor_land", "int"), (np.int64, "plus_pair", "long long")]


def test_lanes_and_eligibility():
    assert [lanes(d) for d in (4, 6, 7, 14, 21, 60, 200)] == [1, 1, 2, 4, 4, 16, 32]
    assert exact_eligible(SR.plus_times, np.float64) and exact_eligible(SR.plus_times, np.float32)
    assert not exact_eligible(SR.plus_times, np.int64)
    assert not exact_eligible(SR.min_plus, np.float64) and not exact_eligible(SR.plus_pair, np.float64)


@pytest.mark.nvcc
@pytest.mark.skipif(NVCC is None, reason="nvcc not found")
@pytest.mark.parametrize("out,name,itype", CASES, ids=[f"{np.dtype(o).name}-{n}" for o, n, _ in CASES])
def test_symmetric_rows_kernels_compile(out, name, itype):
    sr = SR[name]
    tv = gc.CTYPES[np.dtype(out)]
    names = [gc.sym_rows_name(itype, tv, "double", g, t, 4 if t else 1) for g in (1, 2, 4, 8, 16, 32)
             for t in (False, True)]
    if exact_eligible(sr, out):
        work = gc.CTYPES[gc.work_dtype(out)]
        names += [n for g in (1, 4) for t in (False, True)
                  for n in gc.sym_fixed_names(itype, tv, tv, g, t, 4 if t else 1, work)]
    src = gc.standalone(gc.functor(sr.mul, sr.add, out), list(dict.fromkeys(names)))
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "k.cu")
        with open(path, "w") as f:
            f.write(src)
        r = subprocess.run([NVCC, "--ptx", "-arch=sm_90", "-std=c++17", "-o", os.path.join(d, "k.ptx"), path],
                           capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-3000:]
