"""CI guard for the device pruned-kNN kernels (kernels/pruned.cuh): every instantiation the
device search asks NVRTC for compiles for sm_90 with nvcc (no GPU needed), and the source
stays NVRTC-clean (no system headers)."""
import os
import re
import shutil
import subprocess
import tempfile

import pytest

from gbdist.backends.cuda import pruned

NVCC = shutil.which("nvcc")

SIGNATURES = {
    "gb_prune_free": "(const long long*, long long, const {P}*, const int*, const long long*, "
                     "long long, const long long*, int, long long*)",
    "gb_prune_tie": "(const long long*, long long, const {P}*, const int*, const long long*, "
                    "const double*, long long, const double*, const double*, int, const double*, "
                    "const double*, int, const double*, const double*, const int*, int, "
                    "long long*)",
    "gb_prune_merge": "(const {P}*, const int*, const double*, const long long*, const double*, "
                      "int, long long, int, double*, long long*)",
}


def _instantiation(name: str) -> str:
    base, args = name.split("<", 1)
    ptype = args.split(",")[0].rstrip(">").strip()
    return f"template __global__ void {name}{SIGNATURES[base].format(P=ptype)};"


def test_source_is_nvrtc_clean():
    src = pruned.source()
    assert "#include" not in src
    assert not re.search(r"\bM_[A-Z0-9_]+\b|\bHUGE_VAL\b|\bINFINITY\b|\bNAN\b", src)
    assert len(pruned.names()) == len(set(pruned.names())) == 6


@pytest.mark.nvcc
def test_every_instantiation_compiles():
    if NVCC is None:
        pytest.skip("nvcc not found")
    src = pruned.source() + "\n" + "\n".join(_instantiation(n) for n in pruned.names()) + "\n"
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "pruned.cu")
        with open(path, "w") as f:
            f.write(src)
        r = subprocess.run([NVCC, "--ptx", "-arch=sm_90", "-std=c++17", "-o",
                            os.path.join(d, "pruned.ptx"), path], capture_output=True, text=True)
        assert r.returncode == 0, r.stderr[-3000:]
        ptx = open(os.path.join(d, "pruned.ptx")).read()
    assert ptx.count(".entry") == len(pruned.names())


def _prunable_intersects():
    """(metric, Intersect step) of every named metric whose kNN the proof prunes, as the
    device search runs them through the graph SpGEMM."""
    import gbdist as gb
    from gbdist.compiler import ir
    from gbdist.compiler.pruning import pruning
    from gbdist.pairwise import metric_program
    out = []
    for name in gb.metric_names():
        try:
            plan = metric_program(name).plan
        except Exception:  # noqa: BLE001 - metrics that need parameters
            continue
        if not pruning(plan).applies:
            continue
        out += [(name, st.node) for st in plan.steps if isinstance(st.node, ir.Intersect)]
    return out


@pytest.mark.nvcc
def test_overlap_spgemm_compiles_for_every_prunable_metric():
    """The overlap pass instantiates the graph kernels' hash SpGEMM with each Intersect
    step's own ⊗ and ⊕ in float64: every one prints and compiles (nvcc, sm_90; all 11
    distinct ones with GBDIST_SLOW_TESTS=1, a few otherwise)."""
    if NVCC is None:
        pytest.skip("nvcc not found")
    from gbdist.backends.cuda import graph_codegen as gc
    from gbdist.backends.cuda import graph_functor as gf
    cases = _prunable_intersects()
    assert {"cosine", "manhattan", "euclidean", "canberra", "jaccard"} <= {n for n, _ in cases}
    if os.environ.get("GBDIST_SLOW_TESTS") != "1":  # ~3 s a compile: a few by default
        cases = [c for c in cases if c[0] in ("cosine", "manhattan", "jensenshannon", "canberra")]
    seen = {}
    for name, node in cases:  # one compile per distinct (⊗, ⊕)
        seen.setdefault((node.mul.key, node.add.key), (name, node))
    with tempfile.TemporaryDirectory() as d:
        for t, (name, node) in enumerate(seen.values()):
            import numpy as np
            names = [gc.shared_name("int", "double", "double", 32, 1, 8, True, 0),
                     gc.global_name("int", "double", "double", True, 0)]
            src = gc.standalone(gf.functor(node.mul, node.add, np.float64), names)
            path = os.path.join(d, f"s{t}.cu")
            with open(path, "w") as f:
                f.write(src)
            r = subprocess.run([NVCC, "--ptx", "-arch=sm_90", "-std=c++17", "-o",
                                os.path.join(d, f"s{t}.ptx"), path], capture_output=True, text=True)
            assert r.returncode == 0, (name, r.stderr[-2000:])


def _plan_kernels(storage):
    """(metric, generated pruned_plan source) of every named metric the proof prunes, and
    of a user-defined max metric (a two-pass union whose one-sided terms are not |x|)."""
    import gbdist as gb
    from gbdist.backends.cuda import pruned_plan
    from gbdist.compiler.pruning import pruning
    from gbdist.pairwise import metric_program
    gb.define("op prune_maxw(x, y) = abs(2 * x - y)\n"
              "metric prune_maxw_m(A, B) = mxm(A, B.T, semiring(prune_maxw, max))")
    out = []
    for name in sorted(gb.metric_names()):
        try:
            plan = metric_program(name).plan
        except Exception:  # noqa: BLE001 - metrics that need parameters
            continue
        if pruning(plan).applies:
            out.append((name, pruned_plan.kernels(plan, storage)))
    return out


def test_plan_kernels_source(isolated_definitions):
    """The generated summaries / maps / unions: NVRTC-clean, one summary per row-reduction
    step and two per two-pass union, and chebyshev's union struct as derived."""
    import numpy as np
    from gbdist.backends.cuda import pruned_plan
    cases = dict(_plan_kernels(np.float32))
    assert {"chebyshev", "cosine", "jensenshannon", "prune_maxw_m"} <= set(cases)
    for name, pk in cases.items():
        assert "#include" not in pk.source, name
        assert not re.search(r"\bM_[A-Z0-9_]+\b|\bHUGE_VAL\b|\bINFINITY\b|\bNAN\b", pk.source), name
        names = pruned_plan.names(pk, "int", top=False)
        assert len(names) == len(set(names)) == len(pk.sums) + len(
            pruned_plan.UNION_LANE_CHOICES) * len(pk.unions) + sum(m is not None for m in pk.maps.values())
        top = pruned_plan.names(pk, "int", top=True)  # gb_prune_union_keys x 2, _top
        assert len(top) == len(set(top)) == len(names) + 3 * len(pk.tops)
        assert set(pk.tops) <= set(pk.unions)
    cheb = cases["chebyshev"]
    # |2x - y|: a product in a sum (the SpGEMM may fuse it): gb_prune_union keeps it
    assert cheb.tops == {"t0": "max"} and cases["prune_maxw_m"].tops == {}
    assert [(s[0], s[1]) for s in cheb.sums] == [("col", "t0a"), ("row", "t0b")]
    assert "fabs(x - y)" in cheb.source and "gb_max<double>(x, y)" in cheb.source
    assert "fabs(2*x - y)" in cases["prune_maxw_m"].source


@pytest.mark.nvcc
def test_plan_kernels_compile(isolated_definitions):
    """Every instantiation of the generated source (with gb_prune_union_keys /
    gb_prune_union_top, pruned_plan.UNION_TOP's kernels) compiles (nvcc, sm_90): chebyshev
    in float / int and double / long long and jensenshannon (apply chains) in double / long
    long by default, every prunable metric in both with GBDIST_SLOW_TESTS=1."""
    if NVCC is None:
        pytest.skip("nvcc not found")
    import numpy as np
    from gbdist.backends.cuda import pruned_plan
    slow = os.environ.get("GBDIST_SLOW_TESTS") == "1"
    jobs = []
    for storage, itype, few in ((np.float32, "int", ("chebyshev",)),
                                (np.float64, "long long", ("jensenshannon", "chebyshev"))):
        jobs += [(n, pk, itype) for n, pk in _plan_kernels(storage) if slow or n in few]
    assert len(jobs) >= 3
    with tempfile.TemporaryDirectory() as d:
        for t, (name, pk, itype) in enumerate(jobs):
            names = pruned_plan.names(pk, itype, top=True)  # gb_prune_union_top too
            keep = ", ".join(f"(const void*)&{n}" for n in names)
            path = os.path.join(d, f"p{t}.cu")
            with open(path, "w") as f:
                f.write(pk.source + f"\nconst void* gb_instantiate[] = {{ {keep} }};\n")
            r = subprocess.run([NVCC, "--ptx", "-arch=sm_90", "-std=c++17", "-o",
                                os.path.join(d, f"p{t}.ptx"), path], capture_output=True, text=True)
            assert r.returncode == 0, (name, r.stderr[-2000:])
            ptx = open(os.path.join(d, f"p{t}.ptx")).read()
            assert ptx.count(".entry") == len(names), name
