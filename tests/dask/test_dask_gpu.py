"""gbdist.dask with partitions on a GPU worker: the same answers as single-process gb.knn
on the device, bit for bit (issue 14's H100 check; the timing is benchmarks/dask_knn.py)."""
import numpy as np
import pytest
import scipy.sparse as sps

pytestmark = pytest.mark.gpu  # needs CuPy and an NVIDIA GPU (skipped without: tests/conftest.py)

cupy = pytest.importorskip("cupy")
cps = pytest.importorskip("cupyx.scipy.sparse")
distributed = pytest.importorskip("distributed")

import gbdist as gb  # noqa: E402
import gbdist.dask as gbd  # noqa: E402

METRICS = ("euclidean", "cosine", "manhattan", "chebyshev", "canberra", "jensenshannon")


@pytest.fixture(scope="module")
def client():
    try:
        from dask_cuda import LocalCUDACluster
        cluster = LocalCUDACluster(n_workers=1, CUDA_VISIBLE_DEVICES="0", dashboard_address=None)
    except ImportError:  # one worker process pinned to GPU 0
        cluster = distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True,
                                           dashboard_address=None,
                                           env={"CUDA_VISIBLE_DEVICES": "0"})
    c = distributed.Client(cluster)
    yield c
    c.close()
    cluster.close()


def _data(m=3000, n=500, seed=0):
    rng = np.random.default_rng(seed)
    X = sps.random(m, n, density=0.02, format="csr", random_state=rng, dtype=np.float32)
    X.data = np.round(X.data * 8) / 8 + np.float32(0.125)  # ties
    return X


@pytest.mark.parametrize("metric", METRICS)
@pytest.mark.parametrize("n_parts", [1, 3])
def test_gpu_worker_matches_single_process(client, metric, n_parts):
    X = _data()
    d_ref, i_ref = gb.knn(cps.csr_matrix(X), k=10, metric=metric, backend="cuda",
                          symmetric=False)
    parts = gbd.to_device(gbd.partition(X, client, n_partitions=n_parts), client)
    d, i = gbd.knn(parts, k=10, metric=metric, client=client, backend="cuda", symmetric=False)
    np.testing.assert_array_equal(i, cupy.asnumpy(i_ref))
    np.testing.assert_array_equal(d, cupy.asnumpy(d_ref))
    # the symmetric self-join (each block pair once, selection on the device)
    d2, i2 = gbd.knn(parts, k=10, metric=metric, client=client, backend="cuda")
    ds, is_ = gb.knn(cps.csr_matrix(X), k=10, metric=metric, backend="cuda")
    if metric not in ("jensenshannon",):  # see docs/distributed.md, Exactness
        np.testing.assert_array_equal(i2, cupy.asnumpy(is_))
        np.testing.assert_array_equal(d2, cupy.asnumpy(ds))
    np.testing.assert_allclose(d2, cupy.asnumpy(ds), rtol=1e-6)


@pytest.mark.parametrize("metric", METRICS)
def test_replicated_index_matches_single_process(client, metric):
    """Each worker a share of gb.knn's own tiles on its GPU: the same tiles, so the same
    answer bit for bit (jensenshannon included), for many tiles and for one."""
    X = _data()
    R = gbd.replicate(X, client, device=True)
    for wm in (4, None):  # MiB: several square tiles of 3,000 rows; then the default
        d, i = gbd.knn(R, k=10, metric=metric, client=client, backend="cuda", working_memory=wm)
        ds, is_ = gb.knn(cps.csr_matrix(X), k=10, metric=metric, backend="cuda",
                         working_memory=wm)
        np.testing.assert_array_equal(i, cupy.asnumpy(is_))
        np.testing.assert_array_equal(d, cupy.asnumpy(ds))


def test_replicated_index_on_every_gpu():
    """One worker per visible GPU (2 or more): shares on different devices, merged on one."""
    n = cupy.cuda.runtime.getDeviceCount()
    if n < 2:
        pytest.skip("one GPU: the shares of several devices need two or more")
    LocalCUDACluster = pytest.importorskip("dask_cuda").LocalCUDACluster
    X = _data(m=6000, seed=1)
    with LocalCUDACluster(n_workers=n, dashboard_address=None) as cluster, \
            distributed.Client(cluster) as c:
        R = gbd.replicate(X, c, device=True)
        assert len(set(R.workers)) == n
        for metric in ("cosine", "manhattan", "jensenshannon"):
            d, i = gbd.knn(R, k=10, metric=metric, client=c, backend="cuda", working_memory=8)
            ds, is_ = gb.knn(cps.csr_matrix(X), k=10, metric=metric, backend="cuda",
                             working_memory=8)
            np.testing.assert_array_equal(i, cupy.asnumpy(is_))
            np.testing.assert_array_equal(d, cupy.asnumpy(ds))
