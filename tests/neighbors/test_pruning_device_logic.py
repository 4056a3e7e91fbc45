"""The device pruned search's array logic, with no GPU: tests/neighbors/pruned_device_emulation.py
runs gbdist.backends.cuda.pruned with NumPy standing in for CuPy and the kernels replaced
by Python loops written from their specifications, in a separate process (the stand-in
never enters this one), and compares it with the host pruned search and brute force.
Ties across keys (chebyshev's max(L, R), jensenshannon's normalised rows) must be answered
with no row evaluated against every index row. The kernels themselves are checked on a
GPU by tests/neighbors/test_pruning_gpu.py."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
# two unions, and normalised rows (jensenshannon): ties across keys at most queries
FEW = ["cosine", "manhattan", "hamming", "chebyshev", "prune_maxw_m", "jensenshannon"]
MORE = ["euclidean", "jaccard", "jensenshannon", "rogerstanimoto", "braycurtis", "canberra",
        "dice", "hellinger", "inner_product", "russellrao", "sokalsneath", "yule", "matching",
        "kulczynski1", "sqeuclidean", "kl_divergence", "sokalmichener", "weighted_chebyshev",
        "cosine_sklearn", "gower", "minkowski", "seuclidean"]  # GBDIST_SLOW_TESTS=1


@pytest.mark.parametrize("names", [FEW] + ([MORE] if os.environ.get("GBDIST_SLOW_TESTS") == "1"
                                           else []), ids=lambda n: f"{len(n)} metrics")
def test_device_search_logic_matches_host_and_brute_force(names):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(HERE.parents[1]), env.get("PYTHONPATH", "")])
    # --no-dense: a row evaluated against every index row makes the search decline (a
    # mismatch), so the ties across keys must go through gb_prune_tie (the old code, which
    # evaluated them densely, declined here)
    r = subprocess.run([sys.executable, str(HERE / "pruned_device_emulation.py"), "--no-dense",
                        *names], capture_output=True, text=True, env=env, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    lines = r.stdout.strip().splitlines()
    assert lines and lines[-1] == "mismatches 0", "\n".join(lines[-20:])
    ties = int(lines[-2].split()[-1])
    assert lines[-2].startswith("tie rows") and ties > 100, lines[-2]


def test_union_top_glue_matches_host_and_brute_force():
    """pruned_plan.UNION_TOP on (issue 29): the max / min unions (chebyshev, a user max and a
    user min metric, minus chebyshev with its -0.0) through the overlap SpGEMM's values and
    each row's sorted one-sided terms (the sort and the glue as written, the two kernels as
    loops from their specification; the kernels themselves: tests/backends/
    test_pruned_union_top.py on the host, test_pruning_gpu.py on a GPU)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(HERE.parents[1]), env.get("PYTHONPATH", "")])
    r = subprocess.run([sys.executable, str(HERE / "pruned_device_emulation.py"), "--no-dense",
                        "--union-top", "chebyshev", "prune_maxw_m", "prune_negmin_m"],
                       capture_output=True, text=True, env=env, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    lines = r.stdout.strip().splitlines()
    assert lines and lines[-1] == "mismatches 0", "\n".join(lines[-20:])
    assert lines[-3].startswith("union top pairs") and int(lines[-3].split()[-1]) > 1000, lines[-3]
