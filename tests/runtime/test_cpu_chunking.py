"""The CPU backends' chunking: a tiny memory budget gives the same numbers as one
block (on what ``backend="cpu"`` runs: the compiled backend when Numba imports), and
the NumPy backend's triplet expansion and union passes are split within a tile and a
large input stays within its budget (those tests pin ``GBDIST_CPU_BACKEND=numpy``)."""
from __future__ import annotations

import tracemalloc

import numpy as np
import pytest
import scipy.sparse as sps
from numpy.testing import assert_allclose, assert_array_equal

import gbdist as gb
from gbdist.backends import cpu
from datagen import random_dense

A, B = gb.matrices("A B")


class Spy:
    """Counts output tiles (``run_tile`` of the backend ``backend="cpu"`` resolves to, the
    protocol's call per tile) and the NumPy backend's triplet chunks (cpu._triplets)."""

    def __init__(self, monkeypatch):
        self.blocks = 0
        self.triplet_chunks = 0
        cls = type(gb.runtime.get_backend("cpu"))
        real_blocks, real_triplets = cls.run_tile, cpu._triplets

        def blocks(*a, **k):
            self.blocks += 1
            return real_blocks(*a, **k)

        def triplets(*a, **k):
            for item in real_triplets(*a, **k):
                self.triplet_chunks += 1
                yield item

        monkeypatch.setattr(cls, "run_tile", blocks)
        monkeypatch.setattr(cpu, "_triplets", triplets)


@pytest.mark.parametrize("metric,params", [
    ("euclidean", {}), ("manhattan", {}), ("chebyshev", {}), ("canberra", {}), ("cosine", {}),
    ("kl_divergence", {}), ("jaccard", {}), ("minkowski", {"p": 3}), ("correlation", {}),
    ("hamming", {}), ("braycurtis", {}),
])
def test_tiny_budget_same_as_one_block(metric, params, monkeypatch):
    rng = np.random.default_rng(0)
    kind = "nonneg" if metric == "kl_divergence" else "real"
    X, Y = random_dense(rng, 40, 60, kind), random_dense(rng, 30, 60, kind)
    one = gb.pairwise_distances(X, Y, metric=metric, backend="cpu", **params)
    spy = Spy(monkeypatch)
    many = gb.pairwise_distances(X, Y, metric=metric, backend="cpu", working_memory=512 / 2**20,
                                 **params)
    assert spy.blocks >= 20  # row blocks of one or two rows
    assert_allclose(many, one, rtol=1e-12, atol=1e-12, equal_nan=True)


@pytest.mark.parametrize("sr", [
    gb.semirings.min_plus, gb.semirings.max_times, gb.semirings.lor_land,
    gb.semiring(gb.op("canb", lambda x, y: gb.where(abs(x) + abs(y) == 0, 0,
                                                    abs(x - y) / (abs(x) + abs(y)))), gb.ops.plus),
    gb.semiring(gb.ops.minus, gb.ops.max),
])
def test_chunked_triplets_and_union_passes(sr, monkeypatch):
    monkeypatch.setenv("GBDIST_CPU_BACKEND", "numpy")  # the NumPy backend's triplet chunks
    rng = np.random.default_rng(1)
    X, Y = random_dense(rng, 35, 50), random_dense(rng, 25, 50)
    program = gb.compile(gb.mxm(A, B.T, sr))
    one = program(A=sps.csr_matrix(X), B=sps.csr_matrix(Y), backend="cpu")
    spy = Spy(monkeypatch)
    many = program(A=sps.csr_matrix(X), B=sps.csr_matrix(Y), backend="cpu", working_memory="300B")
    assert spy.blocks > 10
    if program.explain().products[0].strategy == "intersection":
        assert spy.triplet_chunks > spy.blocks  # the triplet expansion itself was split
    assert_array_equal(many, one)


def test_budget_splits_triplets_within_a_block():
    rng = np.random.default_rng(2)
    a = sps.csr_matrix(random_dense(rng, 20, 30, density=0.5))
    b = sps.csc_matrix(random_dense(rng, 15, 30, density=0.5))
    chunks = list(cpu._triplets(a, b, budget=48 * 10))
    assert len(chunks) > 10
    total = sum(len(c[0]) for c in chunks)
    pa, pb = (a.toarray() != 0).astype(int), (b.toarray() != 0).astype(int)
    expected = (pa @ pb.T).sum()  # one triplet per (i, j, shared column)
    assert total == expected


@pytest.mark.parametrize("metric", ["chebyshev", "canberra", "euclidean"])
def test_large_input_stays_within_the_budget(metric, monkeypatch):
    """A wide input (k = 100 000): peak memory follows working_memory, not m × k (the NumPy
    backend: tracemalloc sees NumPy's allocations, not those of Numba's kernels, whose
    resident memory tests/runtime/test_inputs.py measures)."""
    monkeypatch.setenv("GBDIST_CPU_BACKEND", "numpy")
    X = sps.random(300, 100_000, density=2e-4, random_state=0, format="csr")
    Y = sps.random(6, 100_000, density=2e-4, random_state=1, format="csr")
    gb.pairwise_distances(X[:2], Y[:2], metric=metric, backend="cpu")  # plan cached
    budget = 4 * 2**20
    tracemalloc.start()
    try:
        D = gb.pairwise_distances(X, Y, metric=metric, backend="cpu", working_memory=budget / 2**20)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    # m × k dense would be 240 MB; the inputs themselves are ~0.1 MB.
    assert peak < 4 * budget, f"peak {peak / 2**20:.1f} MiB"
    ref = gb.pairwise_distances(X[:5], Y, metric=metric, backend="cpu")
    assert_allclose(D[:5], ref, rtol=1e-12)
