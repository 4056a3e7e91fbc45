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
    """The pass is off by default (wrong on the GPU: codegen.DIRECT_UNION); its source is
    still generated and compiled here, for the work that fixes it."""
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
