"""A ``NearestNeighbors``-shaped estimator whose index lives on a Dask cluster.

``fit`` cuts the index into row partitions, persists them on the workers and warms each
worker's compiled plan once; every later ``kneighbors`` / ``radius_neighbors`` call
sends only its queries and reuses those partitions.
"""
from __future__ import annotations

import warnings

from ..errors import NotFittedError
from . import search, tasks
from .partition import partition


class NearestNeighbors:
    """Unsupervised neighbour searches over a ``distributed.Client``.

    Parameters follow scikit-learn's ``NearestNeighbors`` (``n_neighbors``, ``radius``,
    ``metric``, ``p``, ``metric_params``) plus the cluster's: ``client`` (default: the
    current one), ``partition_rows`` / ``n_partitions`` (how the index and the queries
    are cut), ``backend`` and ``working_memory`` (for the single-device gbdist each task
    runs) and ``checkpoint`` (a directory for finished query blocks, see
    :func:`gbdist.dask.knn`). Answers equal ``gbdist.NearestNeighbors``'s, bit for bit.
    """

    def __init__(self, *, n_neighbors=5, radius=1.0, metric="euclidean", p=None,
                 metric_params=None, client=None, partition_rows=None, n_partitions=None,
                 backend="auto", working_memory=None, checkpoint=None):
        self.n_neighbors = n_neighbors
        self.radius = radius
        self.metric = metric
        self.p = p
        self.metric_params = metric_params
        self.client = client
        self.partition_rows = partition_rows
        self.n_partitions = n_partitions
        self.backend = backend
        self.working_memory = working_memory
        self.checkpoint = checkpoint

    def _params(self) -> tuple:
        """scikit-learn's reading of ``p``: minkowski's, with p = 1, 2, inf the named metrics."""
        params = dict(self.metric_params or {})
        metric = self.metric
        if isinstance(metric, str) and metric == "minkowski":
            if "p" in params and self.p is not None:
                warnings.warn("Parameter p is found in metric_params. The corresponding "
                              "parameter from __init__ is ignored.", SyntaxWarning, stacklevel=3)
            p = params.pop("p", self.p)
            p = 2 if p is None else p
            if params.get("w") is None and p in (1, 2, float("inf")):
                params.pop("w", None)
                metric = {1: "manhattan", 2: "euclidean"}.get(p, "chebyshev")
            else:
                params["p"] = p
        return metric, params

    def fit(self, X, y=None):
        """Partition X on the cluster (kept there until this estimator is dropped) and
        compile the metric once on every worker."""
        self.client_ = search._client(self.client)
        self.effective_metric_, self.effective_metric_params_ = self._params()
        self.index_ = partition(X, self.client_, self.partition_rows, self.n_partitions)
        self.n_samples_fit_ = self.index_.n_rows
        self.n_features_in_ = self.index_.n_features
        self.client_.run(tasks.warm, self.effective_metric_, self.effective_metric_params_,
                         self.backend, self.n_features_in_)
        return self

    def _check_fitted(self):
        if not hasattr(self, "index_"):
            raise NotFittedError("This NearestNeighbors instance is not fitted yet. Call 'fit' "
                                 "with appropriate arguments before using this estimator.")

    def _common(self) -> dict:
        return dict(client=self.client_, partition_rows=self.partition_rows,
                    n_partitions=self.n_partitions, backend=self.backend,
                    working_memory=self.working_memory, checkpoint=self.checkpoint,
                    **self.effective_metric_params_)

    def kneighbors(self, X=None, n_neighbors=None, return_distance=True):
        """The ``n_neighbors`` nearest fitted rows of each query (X None: the fitted rows,
        each left out of its own list)."""
        self._check_fitted()
        k = self.n_neighbors if n_neighbors is None else n_neighbors
        Q = self.index_ if X is None else X
        run = search.knn_submit(Q, self.index_, k, self.effective_metric_,
                                exclude_self=X is None, **self._common())
        d, i = run.result()
        return (d, i) if return_distance else i

    def radius_neighbors(self, X=None, radius=None, return_distance=True, sort_results=False):
        """The fitted rows within ``radius`` of each query, as object arrays of arrays."""
        self._check_fitted()
        r = self.radius if radius is None else radius
        Q = self.index_ if X is None else X
        return search.radius_neighbors(Q, self.index_, r, self.effective_metric_,
                                       exclude_self=X is None, return_distance=return_distance,
                                       sort_results=sort_results, **self._common())
