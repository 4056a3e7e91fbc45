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


# The graph kernels' harness (cuda_host/graph_host.h): the block's dynamic shared memory is
# gather_host.h's gb_smem, a kernel's __shared__ arrays static (blocks run one after another).
GRAPH_PRELUDE = '#include "graph_host.h"\n#undef __shared__\n#define __shared__ static\n'


def graph_source(mutate=None) -> str:
    """The generated plus_times (float64) graph-kernel source as the graph harness compiles
    it; ``mutate``: an (old, new) text replacement that must match once."""
    import numpy as np

    import gbdist as gb
    from gbdist.backends.cuda import graph_codegen as gc
    from gbdist.backends.cuda import graph_functor as gf
    sr = gb.semirings.plus_times
    src = gc.source(gf.functor(sr.mul, sr.add, np.dtype(np.float64)))
    src = src.replace("extern __shared__", "extern")
    if mutate:
        assert src.count(mutate[0]) == 1, mutate[0]
        src = src.replace(*mutate)
    return src


def number_line(v) -> str:
    """A driver's input array: its length, then its values (integers, or floats by repr)."""
    import numpy as np
    v = np.asarray(v).ravel()
    return f"{v.size} " + " ".join(repr(float(t)) if v.dtype.kind == "f" else str(int(t)) for t in v)
