"""CI guard for the whole-algorithm CUDA kernels (issue 30, kernels/graph_algorithms.cuh):
every instantiation the host code loads compiles for sm_90 with nvcc (no GPU needed): the
shared module's names, and triangle counting's L kernels, which the host compiles one
instantiation at a time (index, column, degree and row-pointer types, G lanes a row)."""
import os
import shutil
import subprocess
import tempfile

import pytest

from gbdist.backends.cuda import graph_algorithms as ga
from gbdist.resources import read

NVCC = shutil.which("nvcc")


TYPES = ("int", "long long")
LANES = (4, 8, 16, 32)
L_KERNELS = tuple(f"gb_tri_count<{p}, {j}, {d}, {g}>" for p in TYPES for j in TYPES for d in TYPES
                  for g in LANES) + tuple(f"gb_tri_fill<{p}, {j}, {d}, {q}, {g}>" for p in TYPES
                                          for j in TYPES for d in TYPES for q in TYPES for g in LANES)


@pytest.mark.nvcc
@pytest.mark.skipif(NVCC is None, reason="nvcc not found")
def test_algorithm_kernels_compile():
    src = read("kernels", "graph_algorithms.cuh") + "\n[[maybe_unused]] void* const gb_a[] = {" \
        + ", ".join(f"(void*)&{n}" for n in ga._NAMES + L_KERNELS) + "};\n"
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "k.cu")
        with open(path, "w") as f:
            f.write(src)
        r = subprocess.run([NVCC, "-cubin", "-arch=sm_90", "-std=c++17", "-Werror", "all-warnings",
                            "-o", os.path.join(d, "k.cubin"), path], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-3000:]


def test_every_launched_kernel_is_loaded():
    # the names the host code builds are the module's instantiations
    names = set(ga._NAMES)
    for i in ("int", "long long"):
        assert f"gb_tri_intersect<{i}>" in names
        for v in ("int", "long long"):
            assert {f"gb_cc_init<{i}, {v}>", f"gb_cc_hook<{i}, {v}>"} <= names
        assert f"gb_tri_sums<{i}>" in names
    assert {"gb_cc_label<int>", "gb_cc_label<long long>", "gb_rank_update"} <= names
    # L's kernels are loaded one instantiation a call, at the lanes the rule picks: always
    # one the compile test above covers
    assert {ga.tri_lanes(m) for m in (0, 1, 7, 8, 15, 16, 31, 32, 63, 64, 1e3, 1e7)} == set(LANES)
    assert [ga.tri_lanes(m) for m in (8, 16, 32, 64)] == [4, 8, 16, 32]
