"""gbdist's own distances, the oracle and subject of the backend tests.

``gb.pairwise_distances`` follows scikit-learn's conventions (float64 out for most metrics,
cosine 1 against an empty row, docs/metrics.md); the backend tests check gbdist's own
metric on its own dtype path: the metric's program, called as ``pairwise_distances`` was
(``Y=None`` is the self-join, ``working_memory`` in MiB, ``strategy``, ``dtype``, stored
zeros dropped)."""
from __future__ import annotations

import numpy as np


def own_distances(X, Y=None, metric="euclidean", *, backend="auto", working_memory=None,
                  dtype=None, strategy="auto", ensure_all_finite=True, **params):
    from gbdist.pairwise import metric_program
    D = metric_program(metric, **params)(A=X, B=X if Y is None else Y, backend=backend,
                                         working_memory=working_memory, dtype=dtype, strategy=strategy,
                                         ensure_all_finite=ensure_all_finite,
                                         drop_zeros=True)  # as pairwise_distances does
    return D if not isinstance(D, np.ndarray) else np.asarray(D)
