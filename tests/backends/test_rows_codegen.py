"""CI guard for the fused check kernels (kernels/rows.cuh): every instantiation the
runtime asks NVRTC for compiles for sm_90 with nvcc (no GPU needed), the source stays
NVRTC-clean, and the hash constants are host_rows.row_hashes' own."""
import os
import re
import shutil
import subprocess
import tempfile

import pytest

from gbdist.backends import rows as host_rows
from gbdist.backends.cuda import rows

NVCC = shutil.which("nvcc")

SIGNATURES = {
    "gb_facts_init": "({F}*)",
    "gb_csr_check": "(const {I}*, long long, const {I}*, const {T}*, long long, long long*)",
    "gb_row_hash": "(const {I}*, const {I}*, const {T}*, long long, unsigned long long*)",
    "gb_pairs_verify": "(const {I}*, const {I}*, const {T}*, const {I}*, const {I}*, const {T}*, "
                       "const long long*, const long long*, long long, unsigned char*, int, {T}*, "
                       "long long, double)",
    "gb_condition": "(const {I}*, const {T}*, long long, long long, int, int, int, {T}*)",
    "gb_count_nonfinite": "(const {T}*, long long, unsigned long long*)",
    "gb_convert": "(const {T}*, long long, {I}*)",  # <source, destination>: T, I
    "gb_row_sums": "(const {I}*, const double*, long long, double*)",
    "gb_csr_unsorted": "(const {I}*, const {I}*, long long, unsigned long long*)",
}


def _instantiation(name: str) -> str:
    base, args = name.split("<", 1)
    parts = [a.strip() for a in args.rstrip(">").split(",")]
    sig = SIGNATURES[base].format(T=parts[0], F=parts[0], I=parts[-1])
    return f"template __global__ void {name}{sig};"


def test_source_is_nvrtc_clean():
    src = rows.source()
    assert "#include" not in src
    assert not re.search(r"\bM_[A-Z0-9_]+\b|\bHUGE_VAL\b|\bINFINITY\b|\bNAN\b", src)
    assert len(rows.names()) == len(set(rows.names())) == 25
    assert {n.split("<")[0] for n in rows.names()} == set(SIGNATURES)


def test_hash_constants_match_the_host_definition():
    src = rows.source()
    for name, value in (("M1", host_rows._M1), ("M2", host_rows._M2), ("M3", host_rows._M3)):
        m = re.search(rf"#define GB_HASH_{name} (0x[0-9A-Fa-f]+)ull", src)
        assert m is not None and int(m.group(1), 16) == int(value)


@pytest.mark.nvcc
def test_every_instantiation_compiles():
    src = rows.source() + "\n" + "\n".join(_instantiation(n) for n in rows.names()) + "\n"
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "rows.cu")
        with open(path, "w") as f:
            f.write(src)
        r = subprocess.run([NVCC, "--ptx", "-arch=sm_90", "-std=c++17", "-o",
                            os.path.join(d, "rows.ptx"), path], capture_output=True, text=True)
        assert r.returncode == 0, r.stderr[-3000:]
        assert "warning" not in r.stderr.lower(), r.stderr[-3000:]
        ptx = open(os.path.join(d, "rows.ptx")).read()
    assert ptx.count(".entry") == len(rows.names())
