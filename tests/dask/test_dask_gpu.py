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
    # the answer on this process's GPU (one worker: the merge's lists by CUDA IPC)
    d, i = gbd.knn(R, k=10, metric=metric, client=client, backend="cuda", to_device=True)
    assert isinstance(d, cupy.ndarray) and i.dtype == np.int64
    np.testing.assert_array_equal(i.get(), cupy.asnumpy(is_))
    np.testing.assert_array_equal(d.get(), cupy.asnumpy(ds))


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


def test_lists_map_gpu_to_gpu_between_processes(monkeypatch):
    """Two worker processes on GPU 0 (any machine with a GPU): the shares' lists go by CUDA
    IPC (gbdist.dask.ipc), same answer as gb.knn bit for bit, and as with IPC switched off."""
    from gbdist.dask import replicas
    X = _data(m=4000, seed=2)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None,
                                  env={"CUDA_VISIBLE_DEVICES": "0"}) as cluster, \
            distributed.Client(cluster) as c:
        R = gbd.replicate(X, c, device=True)
        assert replicas.peer_to_peer(R)
        for metric in ("cosine", "manhattan"):
            ds, is_ = gb.knn(cps.csr_matrix(X), k=10, metric=metric, backend="cuda",
                             working_memory=8)
            d, i = gbd.knn(R, k=10, metric=metric, client=c, backend="cuda", working_memory=8)
            np.testing.assert_array_equal(i, cupy.asnumpy(is_))
            np.testing.assert_array_equal(d, cupy.asnumpy(ds))
        monkeypatch.setenv("GBDIST_DASK_IPC", "0")  # read on the client: the old transfers
        assert not replicas.peer_to_peer(R)
        d0, i0 = gbd.knn(R, k=10, metric="cosine", client=c, backend="cuda", working_memory=8)
        ds, is_ = gb.knn(cps.csr_matrix(X), k=10, metric="cosine", backend="cuda",
                         working_memory=8)
        np.testing.assert_array_equal(i0, cupy.asnumpy(is_))
        np.testing.assert_array_equal(d0, cupy.asnumpy(ds))
        # a tall index where gb.knn prunes: each worker its rows, gb.knn's answer bit for bit
        from datagen import tall_sparse
        T = tall_sparse().astype(np.float32)
        RT = gbd.replicate(T, c, device=True)
        for metric in ("cosine", "manhattan", "jensenshannon"):
            ds, is_ = gb.knn(cps.csr_matrix(T), k=6, metric=metric, backend="cuda")
            d, i = gbd.knn(RT, k=6, metric=metric, client=c, backend="cuda")
            np.testing.assert_array_equal(i, cupy.asnumpy(is_))
            np.testing.assert_array_equal(d, cupy.asnumpy(ds))
            # the answer to this process's GPU (the rows' lists mapped here by CUDA IPC)
            dd, id_ = gbd.knn(RT, k=6, metric=metric, client=c, backend="cuda", to_device=True)
            assert isinstance(id_, cupy.ndarray) and id_.dtype == np.int64
            np.testing.assert_array_equal(id_.get(), cupy.asnumpy(is_))
            np.testing.assert_array_equal(dd.get(), cupy.asnumpy(ds))
        assert all(RT.decisions.values()) and len(RT.decisions) == 3
        monkeypatch.delenv("GBDIST_DASK_IPC")
        # merged rows to this GPU by IPC, and a checkpoint of them saved on the host
        ds, is_ = gb.knn(cps.csr_matrix(X), k=10, metric="manhattan", backend="cuda",
                         working_memory=8)
        import tempfile
        with tempfile.TemporaryDirectory() as ck:
            for _ in range(2):  # the second call loads every block from the checkpoint
                d, i = gbd.knn(R, k=10, metric="manhattan", client=c, backend="cuda",
                               working_memory=8, to_device=True, checkpoint=ck)
                np.testing.assert_array_equal(i.get(), cupy.asnumpy(is_))
                np.testing.assert_array_equal(d.get(), cupy.asnumpy(ds))


def test_reused_buffers_and_kept_mappings_give_the_same_answer():
    """Reuse (the default; GBDIST_DASK_IPC_REUSE=0 turns it off): each worker lends its
    exported buffers to its next lists and each receiver keeps its mappings; run after run
    the answer is gb.knn's bit for bit, and a worker never holds more than REUSE_SLOTS."""
    from gbdist.dask import ipc
    X = _data(m=4000, seed=4)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None,
                                  env={"CUDA_VISIBLE_DEVICES": "0"}) as cluster, \
            distributed.Client(cluster) as c:
        assert all(c.run(lambda: ipc._reuse()).values())  # on by default
        R = gbd.replicate(X, c, device=True)
        ds, is_ = gb.knn(cps.csr_matrix(X), k=10, metric="manhattan", backend="cuda",
                         working_memory=8)
        for _ in range(4):
            d, i = gbd.knn(R, k=10, metric="manhattan", client=c, backend="cuda",
                           working_memory=8)
            np.testing.assert_array_equal(i, cupy.asnumpy(is_))
            np.testing.assert_array_equal(d, cupy.asnumpy(ds))
        slots = c.run(lambda: len(ipc._SLOTS))
        mapped = c.run(lambda: len(ipc._MAPPED))
        assert all(0 < n <= ipc.REUSE_SLOTS for n in slots.values()), slots
        assert all(0 < n <= ipc.REUSE_SLOTS for n in mapped.values()), mapped  # reused


def test_lists_in_their_own_process():
    """A received copy in the producer's own process reads the producer's arrays (CUDA IPC
    cannot map a process's own buffer); rows come back as fresh device arrays."""
    import pickle
    from gbdist.dask.ipc import Lists
    rng = np.random.default_rng(0)
    d = cupy.asarray(rng.random((50, 7), dtype=np.float32))
    i = cupy.asarray(rng.integers(0, 50, (50, 7)), dtype=cupy.int32)
    L = Lists(d, i)
    copy = pickle.loads(pickle.dumps(L))
    assert "_d" not in copy.__dict__ and len(pickle.dumps(L)) < 1024
    for a, z in ((0, 50), (13, 29), (49, 50), (20, 20)):
        gd, gi = copy.rows(a, z)
        np.testing.assert_array_equal(cupy.asnumpy(gd), cupy.asnumpy(d[a:z]))
        np.testing.assert_array_equal(cupy.asnumpy(gi), cupy.asnumpy(i[a:z]))
    del copy  # a copy going away leaves the producer's arrays in place
    np.testing.assert_array_equal(cupy.asnumpy(L.rows(5, 9)[0]), cupy.asnumpy(d[5:9]))
