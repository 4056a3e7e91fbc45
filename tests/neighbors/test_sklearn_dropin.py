"""The README's scikit-learn block runs unchanged with gbdist's imports in place of
scikit-learn's, and prints what scikit-learn prints."""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

README = Path(__file__).resolve().parents[2] / "README.md"
GB_NEIGHBORS = "from gbdist import NearestNeighbors, KNeighborsTransformer, kneighbors_graph"
GB_METRICS = "from gbdist import pairwise_distances"


def _block() -> str:
    text = README.read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    found = [b for b in blocks if GB_NEIGHBORS in b]
    assert len(found) == 1, "the README's scikit-learn block is missing"
    return found[0]


def _run(code: str, tmp_path, name: str) -> str:
    script = tmp_path / name
    script.write_text(code)
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_readme_block_runs_the_same_with_sklearn_and_gbdist(tmp_path):
    ours = _block()
    theirs = (ours.replace(GB_NEIGHBORS, GB_NEIGHBORS.replace("gbdist", "sklearn.neighbors"))
              .replace(GB_METRICS, GB_METRICS.replace("gbdist", "sklearn.metrics")))
    assert not any("gbdist" in line.split("#")[0] for line in theirs.splitlines())
    out_ours = _run(ours, tmp_path, "ours.py")
    out_theirs = _run(theirs, tmp_path, "theirs.py")
    assert "best_params" not in out_ours and "kneighborsclassifier__n_neighbors" in out_ours
    assert out_ours == out_theirs
