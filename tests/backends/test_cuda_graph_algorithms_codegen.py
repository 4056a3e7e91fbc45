"""CI guard for the whole-algorithm CUDA kernels (issue 30, kernels/graph_algorithms.cuh):
every instantiation the host code loads compiles for sm_90 with nvcc (no GPU needed)."""
import os
import shutil
import subprocess
import tempfile

import pytest

from gbdist.backends.cuda import graph_algorithms as ga
from gbdist.resources import read

NVCC = shutil.which("nvcc")


@pytest.mark.nvcc
def test_algorithm_kernels_compile():
    src = read("kernels", "graph_algorithms.cuh") + "\n[[maybe_unused]] void* const gb_a[] = {" \
        + ", ".join(f"(void*)&{n}" for n in ga._NAMES) + "};\n"
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
            for d in ("int", "long long"):  # the degrees' and counts' type
                assert {f"gb_tri_count<{i}, {v}, {d}>", f"gb_tri_fill<{i}, {v}, {d}>"} <= names
    assert {"gb_cc_label<int>", "gb_cc_label<long long>", "gb_rank_update"} <= names
