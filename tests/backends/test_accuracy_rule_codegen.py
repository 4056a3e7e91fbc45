"""The CUDA source of the accuracy rule's direct plans (issue 26) compiles with nvcc (no
GPU needed): a plus summed over the union by the gather kernel (SKIP_SHARED)."""

import numpy as np
import pytest

from gbdist.backends.cuda.codegen import generate, standalone_source
from tests.nvcc_check import NVCC, compile_ptx
from gbdist.compiler.accuracy import direct_plan
from gbdist.pairwise import metric_program



@pytest.fixture(autouse=True)
def _direct_union_on(monkeypatch):
    """The pass on (codegen.DIRECT_UNION, the default since 2026-11-27), whatever another
    test left."""
    from gbdist.backends.cuda import codegen
    monkeypatch.setattr(codegen, "DIRECT_UNION", True)


def test_the_direct_union_is_refused_while_off(monkeypatch):
    from gbdist.backends.cuda import codegen
    from gbdist.errors import BackendError
    monkeypatch.setattr(codegen, "DIRECT_UNION", False)
    plan = direct_plan(metric_program("minkowski", p=3).plan)
    with pytest.raises(BackendError, match="not idempotent"):
        generate(plan, np.float32, np.float64)


@pytest.mark.parametrize("metric,params", [("minkowski", {"p": 3}), ("minkowski", {"p": 4}),
                                           ("sqeuclidean", {}), ("manhattan", {})])
def test_direct_plan_generates_a_plus_union(metric, params):
    plan = direct_plan(metric_program(metric, **params).plan)
    gen = generate(plan, np.float32, np.float64)
    assert gen.union and gen.direct_union and gen.masked
    assert "static constexpr bool SKIP_SHARED = true;" in gen.source
    assert gen.strategies == ("gather",)
    rewritten = generate(metric_program("euclidean").plan, np.float32)
    assert "static constexpr bool SKIP_SHARED = false;" in rewritten.source


@pytest.mark.nvcc
@pytest.mark.skipif(NVCC is None, reason="nvcc not found")
@pytest.mark.parametrize("p", [3, 4.0, 5.8])
def test_direct_plan_compiles(p):
    plan = direct_plan(metric_program("minkowski", p=p).plan)
    for dt, acc, width, itype in ((np.float32, np.float64, 4, "int"),
                                  (np.float64, None, 8, "long long")):
        r, _ = compile_ptx(standalone_source(generate(plan, dt, acc), width, itype))
        assert r.returncode == 0, r.stderr[-3000:]


def test_the_rule_offers_the_direct_sum_only_where_the_kernel_runs_it(monkeypatch):
    """The device rule's ``direct`` (runtime/bind._device_direct_union): the pass is on and
    every plus-over-the-union step of the direct plan is one generate() takes; a corner
    f(0, 0) that is not absorbed (a user op plus a constant) is refused there, so the rule
    keeps the rewrite (with its warning) instead of choosing a plan the GPU would refuse."""
    import gbdist as gb
    from gbdist.backends.cuda import codegen
    from gbdist.errors import BackendError
    from gbdist.runtime.bind import _device_direct_union
    mink = metric_program("minkowski", p=3).plan
    op = gb.op("g_corner", lambda x, y: x * y + 5e-9)
    prog = metric_program(lambda A, B: gb.mxm(A, B.T, gb.semiring(op, gb.ops.plus)))
    assert _device_direct_union(mink)  # the fixture switched the pass on
    generate(direct_plan(mink), np.float32, np.float64)  # and generate takes it
    cornered = direct_plan(prog.plan)
    assert cornered is not prog.plan  # the user op's union is a rewrite the rule guards
    assert not _device_direct_union(prog.plan)
    with pytest.raises(BackendError, match="corner"):
        generate(cornered, np.float64, None)
    monkeypatch.setattr(codegen, "DIRECT_UNION", False)
    assert not _device_direct_union(mink) and not _device_direct_union()
