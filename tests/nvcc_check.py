"""nvcc for the code-generation tests: compile one CUDA translation unit to PTX for sm_90
(no GPU needed), as every *_codegen test does."""
import os
import shutil
import subprocess
import tempfile

NVCC = shutil.which("nvcc")


def compile_ptx(source: str, name: str = "k"):
    """(the finished nvcc process, the PTX text or "" where it failed) of ``source``."""
    with tempfile.TemporaryDirectory() as d:
        src, ptx = os.path.join(d, f"{name}.cu"), os.path.join(d, f"{name}.ptx")
        with open(src, "w") as f:
            f.write(source)
        r = subprocess.run([NVCC, "--ptx", "-arch=sm_90", "-std=c++17", "-o", ptx, src],
                           capture_output=True, text=True)
        text = open(ptx).read() if r.returncode == 0 else ""
    return r, text
