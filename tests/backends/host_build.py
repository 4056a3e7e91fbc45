"""What the host runs of generated CUDA share (tests/backends/test_*_host.py): a CUDA source
built with g++ against cuda_host/gather_host.h (a std::thread per CUDA thread), and CSR
matrices written as the harness's text lines."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

GXX = shutil.which("g++")
HERE = Path(__file__).parent / "cuda_host"


def build(tmp_path, name: str, source: str) -> str:
    """``source`` (after ``#include "gather_host.h"``) compiled to ``tmp_path/name``."""
    src, exe = tmp_path / f"{name}.cpp", tmp_path / name
    src.write_text('#include "gather_host.h"\n' + source)
    r = subprocess.run([GXX, "-std=c++20", "-O1", "-pthread", "-w", "-I", str(HERE), "-o",
                        str(exe), str(src)], capture_output=True, text=True)
    if r.returncode:
        pytest.fail(r.stderr[-3000:])
    return str(exe)


def csr_lines(M) -> list[str]:
    """indptr, indices and values of M (sorted CSR) as three lines of text."""
    import scipy.sparse as sps
    c = sps.csr_matrix(M)
    c.sort_indices()
    return [" ".join(map(str, c.indptr)), " ".join(map(str, c.indices)),
            " ".join(repr(float(v)) for v in c.data)]
