"""backends.base.keep / recall: the per-matrix facts the CUDA set keeps on a CSR object (the
SpMV's bins and kernel choice, the symmetric product's facts, the diagonals form), keyed by
the object's buffers and shape: a kept None is a fact (a refusal), a new key misses, an object
without attributes keeps nothing."""
from gbdist.backends.base import MISS, keep, recall


class _CSR:
    pass


def test_kept_facts_are_recalled_for_their_key_only():
    M = _CSR()
    assert recall(M, "_gbdist_x", (1, 2)) is MISS
    assert keep(M, "_gbdist_x", (1, 2), None) is None
    assert recall(M, "_gbdist_x", (1, 2)) is None  # a refusal kept, not a miss
    assert recall(M, "_gbdist_x", (1, 3)) is MISS  # other buffers: computed again
    value = {"offsets": [0, 1]}
    assert keep(M, "_gbdist_x", (1, 3), value) is value
    assert recall(M, "_gbdist_x", (1, 3)) is value and recall(M, "_gbdist_x", (1, 2)) is MISS
    assert recall(M, "_gbdist_y", (1, 3)) is MISS


def test_an_object_without_attributes_keeps_nothing():
    frozen = (1, 2)  # a tuple takes no attribute
    assert keep(frozen, "_gbdist_x", 0, "v") == "v"
    assert recall(frozen, "_gbdist_x", 0) is MISS
