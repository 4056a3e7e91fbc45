"""CI guard for the device pruned-kNN kernels (kernels/pruned.cuh): every instantiation the
device search asks NVRTC for compiles for sm_90 with nvcc (no GPU needed), and the source
stays NVRTC-clean (no system headers)."""
import os
import re
import shutil
import subprocess
import tempfile

import pytest

from gbdist.backends.cuda import pruned

NVCC = shutil.which("nvcc")

SIGNATURES = {
    "gb_prune_free": "(const long long*, long long, const {P}*, const int*, const long long*, "
                     "long long, const long long*, int, long long*)",
    "gb_prune_merge": "(const {P}*, const int*, const double*, const long long*, const double*, "
                      "int, long long, int, double*, long long*)",
}


def _instantiation(name: str) -> str:
    base, args = name.split("<", 1)
    ptype = args.split(",")[0].rstrip(">").strip()
    return f"template __global__ void {name}{SIGNATURES[base].format(P=ptype)};"


def test_source_is_nvrtc_clean():
    src = pruned.source()
    assert "#include" not in src
    assert not re.search(r"\bM_[A-Z0-9_]+\b|\bHUGE_VAL\b|\bINFINITY\b|\bNAN\b", src)
    assert len(pruned.names()) == len(set(pruned.names())) == 4


@pytest.mark.nvcc
def test_every_instantiation_compiles():
    if NVCC is None:
        pytest.skip("nvcc not found")
    src = pruned.source() + "\n" + "\n".join(_instantiation(n) for n in pruned.names()) + "\n"
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "pruned.cu")
        with open(path, "w") as f:
            f.write(src)
        r = subprocess.run([NVCC, "--ptx", "-arch=sm_90", "-std=c++17", "-o",
                            os.path.join(d, "pruned.ptx"), path], capture_output=True, text=True)
        assert r.returncode == 0, r.stderr[-3000:]
        ptx = open(os.path.join(d, "pruned.ptx")).read()
    assert ptx.count(".entry") == len(pruned.names())
