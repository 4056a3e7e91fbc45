"""Every Python snippet of README.md runs exactly as written, and its links work in a clone.

The blocks run in a fresh interpreter each, from an empty directory, as a reader
would paste them. A block that asks for the GPU (``backend="cuda"``) is skipped
without one. The first block is also checked against SciPy.
"""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
BASE = "https://github.com/gbdist/gbdist"
BLOCKS = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), flags=re.S)


def _has_gpu() -> bool:
    try:
        import cupy
        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:  # noqa: BLE001 - no CuPy, no driver, no device
        return False


def test_the_readme_has_python_blocks():
    assert len(BLOCKS) >= 2


@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_readme_block_runs_as_written(index, tmp_path):
    block = BLOCKS[index]
    if 'backend="cuda"' in block and not _has_gpu():
        pytest.skip("this block needs a GPU")
    script = tmp_path / f"readme_block_{index}.py"
    script.write_text(block, encoding="utf-8")
    env_path = str(ROOT)
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          timeout=300, cwd=tmp_path,
                          env={**__import__("os").environ, "PYTHONPATH": env_path})
    assert proc.returncode == 0, f"README block {index} failed:\n{proc.stderr}"
    assert "Traceback" not in proc.stderr


def test_first_block_defines_its_data_and_computes_manhattan():
    """The first snippet defines X and Y itself; its D is SciPy's cityblock distance."""
    from scipy.spatial.distance import cdist
    block = BLOCKS[0]
    assert re.search(r"^X = ", block, re.M) and re.search(r"^Y = ", block, re.M)
    ns: dict = {}
    exec(compile(block, "README.md block 0", "exec"), ns)  # our own README, not user input
    X, Y, D = ns["X"], ns["Y"], ns["D"]
    np.testing.assert_allclose(D, cdist(X.toarray(), Y.toarray(), "cityblock"), rtol=1e-5,
                               atol=1e-6)


def test_readme_links_are_relative_and_point_at_files_that_exist():
    """Links into the repository are relative, so that they open in a clone (offline too)
    and on the hosting site alike (issue 27); each names a file or folder that exists."""
    text = README.read_text(encoding="utf-8")
    targets = re.findall(r"\]\(([^)\s]+)\)", text)
    assert targets, "the README links nothing"
    for t in targets:
        assert not t.startswith(BASE), f"{t}: an absolute link into the repository"
        if t.startswith(("https://", "http://")):
            continue
        assert (ROOT / t.split("#")[0]).exists(), f"{t} is not in the repository"
    # no bare repository paths left outside links and code
    prose = re.sub(r"```.*?```", "", text, flags=re.S)
    prose = re.sub(r"\[[^\]]*\]\([^)]*\)", "", prose)
    prose = re.sub(r"`[^`]*`", "", prose)
    prose = "\n".join(ln for ln in prose.splitlines() if not ln.startswith("    "))
    bare = re.findall(r"(?<![\w/`])(?:docs|examples|tests|benchmarks)/[\w./-]*", prose)
    assert not bare, f"paths that are not links: {bare}"


def test_the_setup_names_python_a_venv_and_the_extras():
    text = README.read_text(encoding="utf-8")
    assert "Python 3.10" in text and "python3 -m venv" in text
    for extra in ("[cpu]", "[cuda]", "[test]"):
        assert extra in text
    assert "pip install -e '.[test]' && python -m pytest -q" in text  # what .ci/run runs
