"""Fixtures shared by the CPU test suite (data builders live in datagen.py)."""
from __future__ import annotations

import numpy as np
import pytest


@pytest.fixture
def rng():
    return np.random.default_rng(12345)


@pytest.fixture
def fresh_caches():
    """Clear gbdist's analysis / plan caches around a test that monkeypatches the analysis."""
    from gbdist import algebra, pairwise, plan, proofs
    caches = (algebra.analyze, plan.cached_plan, pairwise._metric_program, proofs._check)
    for c in caches:
        c.cache_clear()
    yield
    for c in caches:
        c.cache_clear()
