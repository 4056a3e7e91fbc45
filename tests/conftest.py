"""Fixtures shared by the CPU test suite (data builders live in datagen.py)."""
from __future__ import annotations

import shutil

import numpy as np
import pytest


def pytest_collection_modifyitems(config, items):
    """``gpu`` tests need CuPy and an NVIDIA GPU; ``nvcc`` tests need the CUDA compiler."""
    from gbdist.backends.cuda import available
    missing = {"gpu": None if available() else "needs CuPy and an NVIDIA GPU",
               "nvcc": None if shutil.which("nvcc") else "nvcc is not installed"}
    for item in items:
        for marker, reason in missing.items():
            if reason and item.get_closest_marker(marker):
                item.add_marker(pytest.mark.skip(reason=reason))


@pytest.fixture
def rng():
    return np.random.default_rng(12345)


@pytest.fixture(autouse=True, scope="session")
def _isolated_analysis_cache(tmp_path_factory):
    """The suite's on-disk analysis cache lives in a temporary directory. The compiled CPU
    kernels (``<cache>/cpu``) are shared with the user's kernel cache instead: a module's
    file name is the hash of its generated source and of the Numba, NumPy, Python and
    gbdist versions, so a later run loads what an earlier one compiled (a fresh machine
    compiles each kernel once, and the processes the suite starts share them)."""
    import os
    from gbdist import paths
    old = os.environ.get("GBDIST_CACHE_DIR")
    root = tmp_path_factory.mktemp("gbdist-cache")
    kernels = paths.cache_dir("cpu")  # where the user's kernels live (None: caching off)
    if kernels is not None:
        try:
            kernels.mkdir(parents=True, exist_ok=True)
            os.symlink(kernels, root / "cpu", target_is_directory=True)
        except OSError:
            pass  # no links, or not writable: the kernels compile into the temporary root
    os.environ["GBDIST_CACHE_DIR"] = str(root)
    yield
    if old is None:
        os.environ.pop("GBDIST_CACHE_DIR", None)
    else:
        os.environ["GBDIST_CACHE_DIR"] = old


@pytest.fixture
def fresh_caches(monkeypatch):
    """Clear gbdist's analysis / plan caches around a test that monkeypatches the analysis.

    The on-disk analysis cache is switched off too: a patched analysis must
    neither be served from it nor written into it.
    """
    import gbdist as gb
    monkeypatch.setenv("GBDIST_CACHE_DIR", "off")
    gb.clear_caches()
    yield
    gb.clear_caches()


@pytest.fixture
def isolated_definitions(monkeypatch):
    """Definitions made by a test do not leak into other tests (names are global)."""
    from gbdist import front, names
    front.ensure_builtins()
    saved = names.snapshot()
    yield
    names.restore(saved)
