"""CI guard for the device top-k kernels (kernels/topk.cuh): every instantiation the
CUDA backend asks NVRTC for compiles for sm_90 with nvcc (no GPU needed), and the
source stays NVRTC-clean (no system headers, no <math.h> macros)."""
import os
import re
import shutil
import subprocess
import tempfile

import pytest

from gbdist.backends.cuda import topk

NVCC = shutil.which("nvcc")

SIGNATURES = {
    "gb_topk": "(const {T}*, long long, long long, int, int, long long, {T}*, long long*)",
    "gb_topk_merge": "(const {T}*, const long long*, int, const {T}*, const long long*, int, "
                     "long long, int, {T}*, long long*)",
    "gb_topk_cols": "(const {T}*, long long, long long, int, long long, {T}*, int*)",
    "gb_transpose": "(const {T}*, long long, long long, long long, {T}*)",
}


def _instantiation(name: str) -> str:
    base, args = name.split("<", 1)
    ctype = args.split(",")[0].rstrip(">").strip()
    return f"template __global__ void {name}{SIGNATURES[base].format(T=ctype)};"


def test_source_is_nvrtc_clean():
    src = topk.source()
    assert "#include" not in src
    assert not re.search(r"\bM_[A-Z0-9_]+\b|\bHUGE_VAL\b|\bINFINITY\b|\bNAN\b", src)
    assert len(topk.names()) == len(set(topk.names())) == 14


@pytest.mark.nvcc
def test_every_instantiation_compiles():
    src = topk.source() + "\n" + "\n".join(_instantiation(n) for n in topk.names()) + "\n"
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "topk.cu")
        with open(path, "w") as f:
            f.write(src)
        r = subprocess.run([NVCC, "--ptx", "-arch=sm_90", "-std=c++17", "-o",
                            os.path.join(d, "topk.ptx"), path], capture_output=True, text=True)
        assert r.returncode == 0, r.stderr[-3000:]
        ptx = open(os.path.join(d, "topk.ptx")).read()
    assert ptx.count(".entry") == len(topk.names())
