"""gbdist on a Dask cluster (``pip install gbdist[dask]``): kNN, radius and pairwise
reductions over a ``distributed.Client``, each task the ordinary single-device gbdist
on one (query block, index block) pair. See docs/distributed.md.

    from distributed import Client, LocalCluster
    import gbdist.dask as gbd
    client = Client(LocalCluster(n_workers=2))
    d, i = gbd.knn(X, k=10, metric="cosine", client=client)
"""
from __future__ import annotations

try:
    import distributed  # noqa: F401
except ImportError as e:  # pragma: no cover - the optional extra is missing
    raise ImportError("gbdist.dask needs Dask's distributed scheduler: "
                      "pip install 'gbdist[dask]' (dask[distributed])") from e

from .estimator import NearestNeighbors
from .partition import Partitions, partition, to_device
from .replicas import Replicated, replicate
from .search import (
    FAN_IN, Run, knn, knn_submit, pairwise_distances_chunked, radius_neighbors, radius_submit)

__all__ = ["knn", "knn_submit", "NearestNeighbors", "radius_neighbors", "radius_submit",
           "pairwise_distances_chunked", "partition", "to_device", "Partitions", "Run", "FAN_IN", "replicate",
           "Replicated"]
