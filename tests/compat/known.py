"""The routed peer tests that fail, each with its cause (see docs/metrics.md).

``DIFFERENCES``: deliberate differences, documented in docs/metrics.md under
"scikit-learn and SciPy drop-in". ``OPEN``: failures that other work items of
issue 8 fix (exact zeros on the diagonal, Jensen–Shannon normalisation); remove
an entry once its fix lands and the routed run passes.
"""
from __future__ import annotations

import re

DIFFERENCES = [
    (r"test_distance\.py::test_gh_17703$",
     "dice/jaccard/russellrao read the nonzero pattern (scikit-learn's boolean conversion); "
     "SciPy computes dice from the raw values of non-boolean input"),
    (r"test_pairwise\.py::test_pairwise_distances_for_sparse_data\[",
     "gbdist computes every metric on sparse input; scikit-learn raises TypeError for "
     "SciPy-backed metrics (minkowski) on sparse matrices"),
    (r"test_neighbors\.py::test_unsupervised_inputs\[",
     "scikit-learn's own estimators do not read a fitted gbdist estimator as X "
     "(gbdist's fit reads scikit-learn's fitted estimators and trees)"),
    (r"test_neighbors\.py::test_auto_algorithm\[",
     "gbdist always searches by brute force: _fit_method is 'brute' for every algorithm"),
    (r"test_neighbors\.py::test_k_and_radius_neighbors_duplicates\[",
     "self-exclusion by index: of more than k duplicates preceding a point, gbdist keeps the "
     "lowest indices, scikit-learn drops the first candidate (wrong under inner_product)"),
    (r"test_distance\.py::Test[CP]dist::test_[cp]dist_calling_conventions\[jensenshannon\]$",
     "jensenshannon refuses negative values (DomainError); SciPy's own function computes them"),
    (r"test_neighbors\.py::test_(k|radius)_?neighbors_brute_backend\[.*mahalanobis\]$",
     "mahalanobis refuses a VI that is not positive semidefinite (the test's A + Aᵀ + 3I has "
     "negative eigenvalues): gbdist whitens the rows by L with VI = L·Lᵀ, which needs VI ⪰ 0; "
     "the peers compute the quadratic form as given (NaN where it is negative)"),
]

# Gone (issue 26): test_pdist_jensenshannon_random_float32 (gb.pdist returns SciPy's float64)
# and the russellrao self-join diagonal (pairwise_distances(X) zeroes it, as scikit-learn).
OPEN: list = []  # nothing open: exact zeros and Jensen–Shannon's normalisation landed


def cause(nodeid: str) -> str | None:
    """Why a routed test is known to fail, or None when it is not known to."""
    for pattern, why in DIFFERENCES + OPEN:
        if re.search(pattern, nodeid):
            return why
    return None
