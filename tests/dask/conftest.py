"""The in-process Dask cluster the CPU tests share: a module sets ``N_WORKERS`` (default 2)."""
import pytest


@pytest.fixture(scope="module")
def client(request):
    distributed = pytest.importorskip("distributed")
    cluster = distributed.LocalCluster(n_workers=getattr(request.module, "N_WORKERS", 2),
                                       threads_per_worker=1, processes=False,
                                       dashboard_address=None)
    c = distributed.Client(cluster)
    yield c
    c.close()
    cluster.close()
