"""The explain tour: the notebook runs (nbclient), its rendered page in docs/ is in sync,
and the pictures docs/decision.md shows mark the entries each strategy visits."""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "docs"))
import make_explain_docs  # noqa: E402

sys.path.pop(0)


def test_the_rendered_tour_in_docs_is_in_sync():
    page = make_explain_docs.page()
    assert make_explain_docs.PAGE.read_text(encoding="utf-8") == page, \
        "docs/explain_tour.md is stale: run python docs/make_explain_docs.py"
    assert "$$d = \\sqrt{\\frac{s}{2}}$$" in page  # the let name s, not the inlined product
    assert "refuted, as expected" in page


@pytest.mark.parametrize("name,visits,steps", [
    ("decision-intersection.svg", 2, 0),        # cosine: A∩B = {1, 5}
    ("decision-union-correction.svg", 10, 0),   # manhattan: A∩B, then A's 4 and B's 4 entries
    ("decision-two-pass-union.svg", 8, 0),      # chebyshev: B's 4 columns, then A's 4
    ("plan-manhattan.svg", 0, 3),               # intersect, reduce A, reduce B
])
def test_the_committed_pictures_mark_the_visited_entries(name, visits, steps):
    svg = (ROOT / "docs" / "img" / name).read_text(encoding="utf-8")
    assert svg.count('id="visit-') == visits
    assert svg.count('id="step-') == steps
    assert len(svg) < 40_000  # small enough to commit


def test_decision_md_shows_every_picture():
    text = (ROOT / "docs" / "decision.md").read_text(encoding="utf-8")
    for name in ("decision-intersection.svg", "decision-union-correction.svg",
                 "decision-two-pass-union.svg", "plan-manhattan.svg"):
        assert f"img/{name}" in text and (ROOT / "docs" / "img" / name).exists()


def test_the_notebook_runs():
    for mod in ("nbclient", "nbformat", "ipykernel"):
        if importlib.util.find_spec(mod) is None:
            pytest.skip(f"{mod} is not installed (pip install gbdist[test])")
    import nbformat
    from nbclient import NotebookClient
    nb = nbformat.read(make_explain_docs.NOTEBOOK, as_version=4)
    NotebookClient(nb, timeout=300, kernel_name="python3",
                   resources={"metadata": {"path": str(ROOT)}}).execute()
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    assert not [o for o in outputs if o.output_type == "error"]
    text = "".join(o.get("text", "") for o in outputs if o.output_type == "stream")
    assert "OK" in text and "refuted, as expected" in text
    shown = [o for o in outputs if o.output_type == "execute_result" and "text/latex" in o["data"]]
    assert any("\\sqrt{\\frac{s}{2}}" in o["data"]["text/latex"] for o in shown)
    assert any("text/html" in o["data"] for o in shown)
    if importlib.util.find_spec("matplotlib") is not None:
        svgs = [o for o in outputs if o.output_type == "display_data" and "image/svg+xml" in o["data"]]
        assert len(svgs) == 4  # the tour's figure, then the three decision kinds
