"""The CUDA module cache on the device: a damaged cached binary is recompiled, not loaded
(a truncated cubin crashed the process in the driver), and a cache folder that cannot be
written falls back to one of the process's own."""
import numpy as np
import pytest
import scipy.sparse as sps

import gbdist as gb

pytestmark = pytest.mark.gpu  # needs CuPy and an NVIDIA GPU (skipped without: tests/conftest.py)

SOURCE = r"""
extern "C" __global__ void twice(const float* x, float* y, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = 2.0f * x[i];
}
"""


def _run(cache):
    import cupy
    fn = cache.module("test-cache", SOURCE, ("twice",)).get_function("twice")
    x = cupy.arange(5, dtype=cupy.float32)
    y = cupy.zeros_like(x)
    fn((1,), (32,), (x, y, np.int32(5)))
    return y.get()


@pytest.mark.parametrize("damage", [lambda b: b[:200], lambda b: b"", lambda b: b[:-1] + b"\0"])
def test_a_damaged_binary_is_recompiled(tmp_path, monkeypatch, damage):
    from gbdist.backends.cuda import cache
    monkeypatch.setenv("GBDIST_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("CUPY_CACHE_DIR", str(tmp_path / "cupy"))
    cache.clear()
    assert np.array_equal(_run(cache), 2 * np.arange(5))
    (binary,) = (tmp_path / "cuda").glob("*.bin")
    whole = binary.read_bytes()
    binary.write_bytes(damage(whole))
    cache.clear()  # as a new process would
    assert np.array_equal(_run(cache), 2 * np.arange(5))
    assert binary.read_bytes() == whole  # written again, whole
    cache.clear()


def test_an_unwritable_cache_folder_falls_back(tmp_path, monkeypatch):
    from gbdist.backends.cuda import cache
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("GBDIST_CACHE_DIR", str(blocker / "below"))
    monkeypatch.setenv("CUPY_CACHE_DIR", str(tmp_path / "cupy"))
    cache.clear()
    assert np.array_equal(_run(cache), 2 * np.arange(5))
    X = sps.random(20, 30, density=0.3, random_state=0, format="csr", dtype=np.float32)
    D = gb.pairwise_distances(X, metric="manhattan", backend="cuda")
    assert np.allclose(D, gb.pairwise_distances(X, metric="manhattan", backend="cpu"), atol=1e-5)
    cache.clear()
