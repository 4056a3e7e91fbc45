"""Which domain checks a device operand's minimum decides (gbdist.inputs._minimum_decides):
the bare variable under a power or log, row scalings of nonnegative rows; anything else is
checked value by value."""
from __future__ import annotations

import numpy as np
import pytest

import gbdist as gb
from gbdist.inputs import _domain_sides, _minimum_decides, check_domains
from gbdist.pairwise import metric_program


def _sides(prog):
    return _domain_sides(prog.plan if hasattr(prog, "plan") else prog)


@pytest.mark.parametrize("metric", ["hellinger", "jensenshannon", "kl_divergence"])
def test_named_nonnegative_metrics_are_decided_by_the_minimum(metric):
    sides = _sides(metric_program(metric))
    assert sides and all(_minimum_decides(op, var, chain) for op, var, _, _, chain in sides)


def test_a_shifted_root_is_checked_value_by_value():
    A, B = gb.matrices("A B")
    shifted = gb.op("root_shift_dm", lambda x, y: (x + 1) ** 0.5 * y)
    prog = gb.compile(gb.mxm(A, B.T, gb.semiring(shifted, gb.ops.plus)))
    sides = _sides(prog)
    assert sides and not any(_minimum_decides(op, var, chain) for op, var, _, _, chain in sides
                             if var == "x")


class _Device:
    """A stand-in for a device operand: the minimum it reports, and whether the values
    were read."""

    def __init__(self, values):
        self._values = np.asarray(values, dtype=np.float64)
        self.read = False

    @property
    def data(self):
        self.read = True
        return self._values

    def device_min(self):
        return float(self._values.min())


def test_a_passing_minimum_reads_no_values_and_a_failing_one_words_the_error():
    plan = metric_program("hellinger")
    plan = plan.plan if hasattr(plan, "plan") else plan
    keys = {(name, flipped) for _, _, name, flipped, _ in _domain_sides(plan)}
    good = {k: _Device([0.0, 0.5, 2.0]) for k in keys}
    check_domains(plan, good)
    assert not any(d.read for d in good.values())
    bad = {k: _Device([0.0, -0.25, 2.0]) for k in keys}
    with pytest.raises(gb.DomainError, match="-0.25"):
        check_domains(plan, bad)
