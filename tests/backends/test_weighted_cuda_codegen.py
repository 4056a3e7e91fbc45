"""The CUDA kernel of a column-weighted product (issue 26; compiler/colfactor.py), no GPU
needed: the gather kernel's plus over the union (SKIP_SHARED) with each column's term
multiplied by κ(w) read at its column; its source compiles with nvcc in float32 and
float64; ``backend="auto"`` no longer sends these plans to the CPU; the pruned device kNN
declines them. The values are checked against SciPy on the GPU (test_weighted_gpu.py)."""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from gbdist.backends.cuda.codegen import generate, standalone_source
from tests.nvcc_check import NVCC, compile_ptx
from gbdist.compiler import ir
from gbdist.pairwise import metric_program

WEIGHTED = (("canberra", "weighted_canberra"), ("hamming", "weighted_hamming"),
            ("gower", "gower_mixed"))  # gower with w= and cat=: κ(w) of a scaled term


def _plan(metric, k=5):
    extra = {"cat": np.array([0, 1, 0, 1, 0])} if metric == "gower_mixed" else {}
    return metric_program(metric, w=np.linspace(0.5, 2.0, k), **extra).plan


def _weighted_steps(plan):
    return [s for s in plan.steps if isinstance(s.node, ir.TwoPassUnion) and s.node.weight is not None]


@pytest.mark.parametrize("scipy_name,metric", WEIGHTED)
def test_the_weighted_step_reads_kappa_at_each_column(scipy_name, metric):
    plan = _plan(metric)
    steps = _weighted_steps(plan)
    assert steps, "the plan has no weighted step: nothing for the kernel to weight"
    for dt, acc in ((np.float32, np.float64), (np.float64, None), (np.float32, np.float32)):
        gen = generate(plan, dt, acc)
        assert gen.weights == tuple(dict.fromkeys(s.node.weight.key for s in steps))
        assert gen.strategies == ("gather",) and gen.union and gen.direct_union and gen.masked
        spec = gen.source[gen.source.index("struct Spec "):]
        assert f"static constexpr int NW = {len(gen.weights)};" in spec
        assert "static constexpr bool SKIP_SHARED = true;" in spec
        # both passes multiply the term by the weight at the pair's column
        for fn in ("step(", "step_swapped("):
            body = spec[spec.index(f"static void {fn}"):]
            body = body[:body.index("\n  }")]
            assert "* wts[0 * K + col])" in body, body
        assert "wts" in gen.source[gen.source.index("gb_gather("):]


def test_an_unweighted_plan_reads_no_weights():
    gen = generate(metric_program("canberra").plan, np.float32)
    assert gen.weights == ()
    assert "static constexpr int NW = 0;" in gen.source
    assert "wts[" not in gen.source[gen.source.index("struct Spec "):gen.source.index("};")]


@pytest.mark.nvcc
@pytest.mark.skipif(NVCC is None, reason="nvcc not found")
@pytest.mark.parametrize("scipy_name,metric", WEIGHTED)
def test_the_weighted_kernel_compiles(scipy_name, metric):
    plan = _plan(metric)
    for dt, acc, rows, itype in ((np.float32, np.float64, 4, "int"),
                                 (np.float64, None, 8, "long long")):
        r, _ = compile_ptx(standalone_source(generate(plan, dt, acc), rows, itype))
        assert r.returncode == 0, r.stderr[-3000:]


def test_auto_keeps_the_weighted_plan_off_the_cpu_redirect(monkeypatch):
    """backend="auto" resolves a weighted plus union as any other plan (CUDA where a GPU is
    present), and an unweighted one too while the CUDA pass for it is on
    (codegen.DIRECT_UNION); with the pass switched off, the unweighted one goes to the CPU."""
    from gbdist.runtime import core
    asked = []

    def spy(name, *a, **k):
        asked.append(name)
        raise RuntimeError("stop")

    monkeypatch.setattr(core, "get_backend", spy)
    X = np.abs(np.random.default_rng(0).normal(size=(4, 5)))
    prog = metric_program("weighted_canberra", w=np.ones(5))
    with pytest.raises(RuntimeError, match="stop"):
        core.run(prog.plan, {"A": X, "B": X, "w": np.ones(5)}, backend="auto")
    assert asked == ["auto"]
    from gbdist.compiler.accuracy import direct_plan
    from gbdist.backends.cuda import codegen
    plan = direct_plan(metric_program("minkowski", p=3).plan)
    for on, want in ((True, "auto"), (False, "cpu")):
        monkeypatch.setattr(codegen, "DIRECT_UNION", on)
        with pytest.raises(RuntimeError, match="stop"):
            core.run(plan, {"A": X, "B": X}, backend="auto")
        assert asked[-1] == want
    # a union summed directly whose corner f(0, 0) = exp(0) = 1 the pass cannot absorb:
    # the CPU runs it with the pass on too
    import gbdist as gb
    A, B = gb.matrices("A B")
    steep = gb.op("steep_redirect_test", lambda x, y: gb.exp(abs(x - y) / 4))
    plan = gb.compile(gb.mxm(A, B.T, gb.semiring(steep, gb.ops.plus))).plan
    monkeypatch.setattr(codegen, "DIRECT_UNION", True)
    assert not codegen.sums_as_written(plan)
    with pytest.raises(RuntimeError, match="stop"):
        core.run(plan, {"A": X, "B": X}, backend="auto")
    assert asked[-1] == "cpu"


def test_the_pruned_device_knn_declines_a_weighted_plan():
    from gbdist.backends.cuda.pruned import search_pruned_device
    from gbdist.compiler.pruning import pruning
    plan = _plan("weighted_canberra")
    decision = pruning(plan)
    assert not decision.applies and "column-weighted" in decision.reason
    bound = SimpleNamespace(plan=plan, weights={_weighted_steps(plan)[0].node.weight.key:
                                                np.ones(5)}, data={}, ncols=5)
    assert search_pruned_device(bound, decision, 5, np.float64) is None
