"""scikit-learn's and SciPy's own tests, run with their calls routed to gbdist.

The peers' test files are the ones installed with their wheels, routed before they are
imported (plugin.py), so what they build at import time (SciPy's weight-checking
wrappers ``wcdist``, ``wpdist``, ``wcosine`` ...) reaches gbdist. The suite runs a
fixed, representative part of them (neighbour searches and graphs, precomputed
distances, chunked distances with ``reduce_func`` and ``working_memory`` in MiB, boolean
metrics, SciPy's ``out=`` conventions against SciPy's own answer, weighted calls through
SciPy's wrappers) in one pytest subprocess; ``GBDIST_SLOW_TESTS=1`` runs the three files
whole. Every routed test must pass, or fail for a cause listed in :mod:`compat.known`.
"""
from __future__ import annotations

import importlib.util
import os

import pytest

from compat import known, run

SLOW = os.environ.get("GBDIST_SLOW_TESTS") == "1"

MODULES = ["scipy.spatial.tests.test_distance", "sklearn.metrics.tests.test_pairwise",
           "sklearn.neighbors.tests.test_neighbors"]

pytestmark = pytest.mark.skipif(
    not all(importlib.util.find_spec(m) for m in MODULES),
    reason="the installed scikit-learn / SciPy wheels do not ship their test files")

# SciPy's tests whose calls pass w= through the wrappers test_distance builds at import
# (wcdist_no_const, wpdist, wcosine, weuclidean ...: each call is repeated with unit,
# scaled, zero-padded, duplicated and split weights), and direct weighted calls
WEIGHTED = ["test_cdist_euclidean_random_unicode", "test_pdist_cosine_random",
            "test_pdist_minkowski_3_2_iris", "TestSomeDistanceFunctions",
            "(TestChebyshev and weight)", "test_minkowski_w", "test_Xdist_non_negative_weights"]

# The representative part: test names selected with -k in all three files (the slow
# 1000-row cases, test_unsupervised_kneighbors and the chunked diagonal, run in the slow run).
SELECTION = " or ".join([
    "test_cdist_out", "test_pdist_out", "test_gh_17703",
    "(test_pairwise_distances_chunked and not diagonal)", "test_pairwise_precomputed",
    "test_pairwise_boolean_distance",
    "test_kneighbors_graph", "test_radius_neighbors_graph",
    "test_precomputed_dense", "test_precomputed_sparse_knn", "test_precomputed_sparse_radius",
    "test_k_and_radius_neighbors_duplicates", "test_not_fitted_error_gets_raised",
    "test_non_euclidean_kneighbors", "test_include_self_neighbors_graph",
    "test_kneighbors_brute_backend", "test_pdist_jensenshannon_iris",
    "test_parallel_pairwise_distances_diagonal", *WEIGHTED,
    # unknown parameters (gbdist's TypeError), too few rows for mahalanobis' default VI,
    # bare per-pair functions under test, vectors of unequal lengths
    "test_cdist_extra_args", "test_cdist_mahalanobis", "test_bad_p",
    "test_correlation_positive", "test_hamming_unequal_length",
])


def _check(records, min_routed: int):
    s = run.summary(records)
    assert s["routed"] >= min_routed, f"only {s['routed']} tests routed a call to gbdist"
    unknown = [(nodeid, msg) for nodeid, msg in s["failures"]
               if known.cause(nodeid, msg) is None]
    assert not unknown, "routed peer tests fail for an unlisted cause:\n" + "\n".join(
        f"{n}: {m}" for n, m in unknown)
    return s


def test_representative_part_of_the_peers_tests():
    records = run.run("", ["-k", SELECTION, *MODULES], timeout=300)
    s = _check(records, min_routed=100)
    # the selection really covers each peer
    for name in ("test_distance.py", "test_pairwise.py", "test_neighbors.py"):
        assert any(r["nodeid"].startswith(name) and r.get("routed") for r in records), name
    assert s["passed"] >= 0.9 * (s["routed"] - s["skipped"])
    by_id = {r["nodeid"]: r for r in records}
    # routed before import: the wrapper wcdist_no_const (built when test_distance was
    # imported) calls gbdist for the plain call and its 5 weighted repetitions
    wrapped = by_id["test_distance.py::TestCdist::test_cdist_euclidean_random_unicode"]
    assert wrapped["routed"] >= 6 and wrapped["outcome"] == "passed", wrapped
    # SciPy's per-pair functions through their wrappers (weuclidean(x, y) ...) reach gbdist
    direct = by_id["test_distance.py::TestSomeDistanceFunctions::test_euclidean"]
    assert direct["routed"] >= 1 and direct["outcome"] == "passed", direct
    # out= is compared with SciPy's own answer: one routed call per out= argument
    out = by_id["test_distance.py::TestCdist::test_cdist_out[euclidean]"]
    assert out["routed"] == 5 and out["outcome"] == "passed", out
    # SciPy's rule for the default VI (more rows than columns), followed; an unknown
    # parameter is gbdist's TypeError; a bare function under test reaches gbdist
    for test_id in ("TestCdist::test_cdist_mahalanobis", "TestCdist::test_cdist_extra_args[cosine]",
                    "test_bad_p[0.0]", "TestSomeDistanceFunctions::test_correlation_positive"):
        r = by_id["test_distance.py::" + test_id]
        assert r["routed"] >= 1 and r["outcome"] == "passed", r


def test_known_causes_are_matched_by_their_patterns():
    # fixed by gb.pdist returning SciPy's float64 (issue 26): no longer excused
    assert known.cause("test_distance.py::TestPdist::test_pdist_jensenshannon_random_float32") \
        is None
    assert known.cause("test_distance.py::TestCdist::test_cdist_calling_conventions[jensenshannon]")
    # fixed since (row normalisation, exact zeros): no longer excused
    assert known.cause("test_distance.py::TestPdist::test_pdist_jensenshannon_iris") is None
    assert known.cause("test_pairwise.py::test_parallel_pairwise_distances_diagonal[euclidean]") is None
    assert known.cause("test_neighbors.py::test_auto_algorithm[X3-euclidean-None-kd_tree]")
    assert known.cause("test_neighbors.py::test_unsupervised_kneighbors[float64]") is None
    # a rounding excuse holds only within its tolerance, and only for its metrics
    rounding = "AssertionError: | Max relative difference among violations: {}"
    assert known.cause("test_distance.py::TestCdist::test_cdist_out[cosine]",
                       rounding.format("4.59552221e-15"))
    assert known.cause("test_distance.py::TestCdist::test_cdist_out[cosine]",
                       rounding.format("2.1e-07")) is None
    assert known.cause("test_distance.py::TestCdist::test_cdist_out[cosine]", "") is None
    assert known.cause("test_distance.py::TestCdist::test_cdist_out[euclidean]",
                       rounding.format("1.1e-15")) is None
    # fixed (SciPy's rule for the default VI): no longer excused
    assert known.cause("test_distance.py::TestCdist::test_cdist_mahalanobis") is None
    # a wording excuse holds only for gbdist's own message (an error of the right type)
    hamming = "test_distance.py::test_hamming_unequal_length_with_w"
    assert known.cause(hamming, "AssertionError: Regex pattern did not match. | Expected regex: "
                       "\"'w' should ...\" | Actual message: \"the column operand 'w' must have "
                       "one value per column\nExpected: ...")
    assert known.cause(hamming, "Failed: DID NOT RAISE <class 'ValueError'>") is None


@pytest.mark.skipif(not SLOW, reason="the whole routed run takes minutes: GBDIST_SLOW_TESTS=1")
@pytest.mark.parametrize("module", MODULES)
def test_whole_peer_file(module):
    _check(run.run(module, timeout=1800), min_routed=100)
