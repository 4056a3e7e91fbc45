"""``working_memory`` has one unit (MiB, as scikit-learn counts it) and one parser for
strings with units, in every entry point: pairwise_distances, the chunked generator,
knn, the estimators, ``program(...)`` and the CLI (tests/cli)."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sps
from scipy.spatial.distance import cdist

import gbdist as gb
from gbdist.runtime import parse_size

MIB = 2**20


@pytest.mark.parametrize("text,nbytes", [
    ("512MiB", 512 * MIB), ("512", 512 * MIB), ("2GB", 2 * 10**9), ("1.5GiB", 3 * 2**29),
    ("300kB", 300_000), ("300 KiB", 300 * 1024), ("4096B", 4096), ("256m", 256 * MIB),
    (" 2 gib ", 2 * 2**30), ("1e3kB", 10**6), (".5MiB", MIB // 2)])
def test_strings_with_units(text, nbytes):
    assert parse_size(text) == nbytes


def test_numbers_count_mib():
    assert parse_size(256) == 256 * MIB and parse_size(1500 / MIB) == 1500
    assert parse_size(np.float32(0.5)) == MIB // 2 and parse_size(None) is None


BAD = ["16 furlongs", "MiB", "", "-1MiB", "0", 0, -3, 0.1 / MIB, "0.5B", True, np.bool_(True),
       float("nan"), float("inf"), "inf", [1], b"16MiB", "2**20", "99999999999TiB"]


@pytest.mark.parametrize("value", BAD, ids=repr)
def test_one_error_class_everywhere(value):
    X = np.random.default_rng(0).random((6, 4))
    A, B = gb.matrices("A B")
    prog = gb.compile(gb.mxm(A, B.T, gb.semirings.plus_times))
    calls = [lambda: gb.pairwise_distances(X, working_memory=value, backend="cpu"),
             lambda: next(gb.pairwise_distances_chunked(X, working_memory=value, backend="cpu")),
             lambda: gb.knn(X, k=2, working_memory=value, backend="cpu"),
             lambda: gb.cdist(X, X, working_memory=value, backend="cpu"),
             lambda: prog(A=X, B=X, working_memory=value, backend="cpu")]
    if isinstance(value, str):  # scikit-learn's own validation refuses the other types first
        calls.append(lambda: gb.NearestNeighbors(n_neighbors=2, working_memory=value,
                                                 backend="cpu").fit(X).kneighbors(X))
    for call in calls:
        with pytest.raises(gb.ParameterError) as info:
            call()
        err = info.value
        assert "working_memory" in err.message and err.got == repr(value)
        assert err.expected.startswith("a positive number of MiB") and "1.5GiB" in err.hint


def test_the_same_budget_tiles_the_same_way():
    rng = np.random.default_rng(3)
    X, Y = rng.random((40, 30)), rng.random((25, 30))
    ref = cdist(X, Y)
    blocks = {}
    for wm in (2048 / MIB, "2048B", "2KiB", "2.048kB"):
        chunks = list(gb.pairwise_distances_chunked(X, Y, working_memory=wm, backend="cpu"))
        blocks[repr(wm)] = [c.shape[0] for c in chunks]
        np.testing.assert_allclose(np.vstack(chunks), ref, rtol=1e-12, atol=1e-12)
    assert len(set(map(tuple, blocks.values()))) == 1 and len(blocks["'2KiB'"]) > 1
    big = [c.shape[0] for c in gb.pairwise_distances_chunked(X, Y, working_memory="1GB",
                                                              backend="cpu")]
    assert big == [40]
    A, B = gb.matrices("A B")
    prog = gb.compile(gb.mxm(A, B.T, gb.semirings.plus_times))
    np.testing.assert_allclose(prog(A=sps.csr_matrix(X), B=Y, backend="cpu", working_memory="300B"),
                               X @ Y.T, rtol=1e-12)
    nn = gb.NearestNeighbors(n_neighbors=3, working_memory="1500B", backend="cpu").fit(Y)
    d, _ = nn.kneighbors(X)
    np.testing.assert_allclose(d, np.sort(ref, axis=1)[:, :3], rtol=1e-12, atol=1e-12)
