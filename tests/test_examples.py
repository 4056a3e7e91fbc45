"""The scripts in examples/ run and print what they promise."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"

EXPECT = {
    "new_metric.py": ["op: op chi2(x, y)", "strategy: union-correction",
                      "max abs difference from the NumPy loop", "OK"],
    "decision_tour.py": ["dot product", "intersection", "union-correction", "two-pass-union",
                         "annihilator=None forbids", "cannot be evaluated sparsely",
                         "expansion    rank 3", "[proved symbolically (sympy)"],
    "min_plus_paths.py": ["explicit zeros", "home -> park in at most two hops: 4.0 minutes",
                          "home -> station: 14.0 minutes", "OK: matches Floyd-Warshall"],
    "bfs.py": ["frontier sizes per level: [1, ", "reached 1999 of 2000 vertices",
               "OK: levels match SciPy csgraph and networkx"],
    "triangles.py": ["masked product: C has", "gbdist.algorithms.triangle_count: 8015",
                     "OK: 8015 triangles, as networkx and SciPy count them"],
}


def test_every_example_is_checked():
    assert sorted(p.name for p in EXAMPLES.glob("*.py")) == sorted(EXPECT)


@pytest.mark.parametrize("script", sorted(EXPECT))
def test_example_runs(script):
    env = dict(os.environ)
    root = str(EXAMPLES.parent)
    env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
    proc = subprocess.run([sys.executable, str(EXAMPLES / script)], capture_output=True,
                          text=True, timeout=120, env=env, cwd=root)
    assert proc.returncode == 0, proc.stderr
    for piece in EXPECT[script]:
        assert piece in proc.stdout, f"{script}: {piece!r} missing from its output"
    assert "Traceback" not in proc.stderr
