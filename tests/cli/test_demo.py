"""The README's main job (`gbdist demo`) runs end to end and its kNN stage is exact."""
import re
import subprocess
import sys


def test_demo_runs_distances_and_knn():
    out = subprocess.run([sys.executable, "-m", "gbdist", "demo", "--rows", "600", "--cols", "400",
                          "--nnz", "6000", "--queries", "100", "--backend", "cpu", "-k", "5", "--progress"],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    text = out.stdout
    assert re.search(r"manhattan\s+union-correction", text)
    assert re.search(r"chebyshev\s+two-pass-union", text)
    assert re.search(r"euclidean\s+union-correction\s+1\s", text)
    rows = re.findall(r"^(cosine|manhattan)\s+[\d.]+\s+[\d.e+]+\s+([\d.]+)$", text, re.M)
    assert [name for name, _ in rows] == ["cosine", "manhattan"]
    assert all(float(recall) == 1.0 for _, recall in rows)
    # tqdm's bar on stderr: one step per metric of both stages, elapsed time and ETA
    assert "demo: 100%|" in out.stderr and "8/8" in out.stderr
    assert re.search(r"\[\d\d:\d\d<\d\d:\d\d", out.stderr)
    assert "%|" not in text  # the tables on stdout are not mixed with the bar
