"""The CUDA backend's generated sources kept on disk (gbdist/backends/cuda/genstore.py): a
warm process rebuilds a plan's Generated from its record without importing sympy (DESIGN
§6), the record gives back what the generator made (the source, the strategies' inputs, the
accumulators' formula counts, the reductions' steps), a damaged or foreign record is a miss,
and the generator's switches set through ``codegen`` reach the runtime. No GPU needed."""
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from gbdist.backends.cuda import genstore
from gbdist.pairwise import metric_program

METRICS = ["manhattan", "cosine", "jaccard", "chebyshev", "canberra", "jensenshannon"]


@pytest.mark.parametrize("metric", METRICS)
def test_a_record_gives_back_what_the_generator_made(metric):
    from gbdist.backends.cuda.codegen import generate
    plan = metric_program(metric).plan
    gen = generate(plan, np.dtype("float32"), np.dtype("float64"))
    rec = json.loads(json.dumps(genstore.to_record(gen)))  # as the disk holds it
    back = genstore.from_record(rec, plan)
    for f in ("source", "key", "gather", "union", "structural", "dense_maps", "sorted_order",
              "acc_itemsize", "split_exponent", "float_split", "direct_union", "weights",
              "dense_union", "strategies", "masked"):
        assert getattr(back, f) == getattr(gen, f), f
    assert [(a.ops, a.divs, a.trans) for a in back.accumulators] == \
        [(a.ops, a.divs, a.trans) for a in gen.accumulators]
    assert [(r.step, r.kind) for r in back.reductions] == [(r.step, r.kind) for r in gen.reductions]
    if gen.dense_maps is not None:
        assert isinstance(back.dense_maps, tuple) and hash(back.dense_maps) == hash(gen.dense_maps)


def test_formula_counts_see_divisions_and_transcendentals():
    from gbdist.backends.cuda.codegen import generate
    counts = {m: [(a.ops, a.divs, a.trans) for a in generate(metric_program(m).plan,
                                                             np.dtype("float64")).accumulators]
              for m in ("manhattan", "jensenshannon", "canberra")}
    assert all(d == t == 0 for _, d, t in counts["manhattan"])
    assert any(t > 0 for _, _, t in counts["jensenshannon"])  # logarithms
    assert any(d > 0 for _, d, _ in counts["canberra"])       # |x - y| / (|x| + |y|)


def test_a_damaged_or_foreign_record_is_a_miss(tmp_path, monkeypatch):
    monkeypatch.setenv("GBDIST_CACHE_DIR", str(tmp_path))
    from gbdist.backends.cuda.codegen import generate
    plan = metric_program("cosine").plan
    gen = generate(plan, np.dtype("float64"))
    key = ("cosine-test", 1)
    genstore.store(key, gen)
    assert genstore.load(key, plan).source == gen.source
    assert genstore.load(("another key", 1), plan) is None
    rec = genstore.to_record(gen)
    rec["source"] += "// edited"
    genstore.records.store(genstore.record_key(key), rec, "programs")
    assert genstore.load(key, plan) is None  # the source no longer matches its key
    rec = genstore.to_record(gen)
    rec["reductions"] = [["no such step", "col"]]  # a record naming steps the plan lacks
    genstore.records.store(genstore.record_key(key), rec, "programs")
    assert genstore.load(key, plan) is None
    genstore.store(key, gen)
    assert genstore.load(key, plan).source == gen.source


def test_codegen_switches_reach_the_runtime(monkeypatch):
    import importlib
    from gbdist.backends.cuda import codegen
    bind = importlib.import_module("gbdist.runtime.bind")  # the module (gbdist.runtime.bind is a function too)
    assert codegen.DIRECT_UNION is genstore.DIRECT_UNION is True
    monkeypatch.setattr(codegen, "DIRECT_UNION", False)
    assert genstore.DIRECT_UNION is False and not bind._device_direct_union()
    monkeypatch.undo()
    assert genstore.DIRECT_UNION is True and bind._device_direct_union()
    before = genstore.knobs()
    codegen.FLOAT_SPLIT = False
    try:
        assert genstore.knobs() != before and codegen.knobs() == genstore.knobs()
    finally:
        codegen.FLOAT_SPLIT = True
    assert genstore.knobs() == before


_WARM = textwrap.dedent("""
    import sys
    import numpy as np
    from gbdist.backends import cuda
    from gbdist.pairwise import metric_program
    for m in ("manhattan", "cosine", "chebyshev"):
        gen = cuda.generated(metric_program(m).plan, "float32")
        print(m, gen.key, len(gen.accumulators), gen.strategies)
    print("sympy" in sys.modules)
""")


def test_a_warm_process_generates_without_sympy(tmp_path):
    """The first process generates (and imports sympy); the second, on the same cache
    folder, rebuilds the same sources from their records without importing sympy."""
    env = dict(os.environ, GBDIST_CACHE_DIR=str(tmp_path))
    runs = [subprocess.run([sys.executable, "-c", _WARM], env=env, capture_output=True, text=True,
                           timeout=300) for _ in range(2)]
    for r in runs:
        assert r.returncode == 0, r.stderr[-2000:]
    first, second = (r.stdout.splitlines() for r in runs)
    assert first[:-1] == second[:-1]  # the same keys, accumulators and strategies
    assert first[-1] == "True" and second[-1] == "False"


def test_a_changed_kernel_template_changes_the_key(tmp_path, monkeypatch):
    """The record's key digests the kernel templates (kernels/*.cuh) the stored source
    includes: one edited template, and no record made before is read."""
    import shutil

    import gbdist.resources as resources
    before = genstore.record_key(("plan", 1))
    copy = tmp_path / "kernels"
    shutil.copytree(resources.folder("kernels"), copy)
    with open(copy / "gather.cuh", "a") as f:
        f.write("\n// edited\n")
    monkeypatch.setattr(resources, "folder", lambda name: copy if name == "kernels" else None)
    monkeypatch.setattr(genstore, "_DIGEST", [])
    assert genstore.record_key(("plan", 1)) != before
    monkeypatch.undo()
    genstore._DIGEST.clear()
    assert genstore.record_key(("plan", 1)) == before

