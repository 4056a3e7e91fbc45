"""docs/metrics.md lists every registered metric and alias (issue 26), in a table row that
states its definition, and every name gbdist refuses (NOT_HERE, NOT_WEIGHTED) with why."""
from __future__ import annotations

import re
from pathlib import Path

import gbdist as gb
from gbdist import names
from gbdist.front import colparams

PAGE = Path(__file__).resolve().parents[2] / "docs" / "metrics.md"


def _rows() -> list[str]:
    return [line for line in PAGE.read_text(encoding="utf-8").splitlines()
            if line.startswith("| `")]


def _first_cell(row: str) -> str:
    return row.split(" | ")[0]


def _library_metrics() -> list[str]:
    """Every metric the library (metrics.gbd) registers (other tests' own metrics aside)."""
    return [n for n in gb.metric_names() if names.get_metric(n).source.endswith("metrics.gbd")]


def test_every_registered_metric_has_a_row_of_its_own():
    firsts = [_first_cell(r) for r in _rows()]
    for name in _library_metrics():
        found = [f for f in firsts if re.match(rf"\| `{re.escape(name)}`( |$)", f)]
        assert found, f"{name} has no row in docs/metrics.md"


def test_every_alias_is_listed_with_its_metric():
    library = set(_library_metrics())
    rows = _rows()
    for alias, target in names._STATE.aliases.items():
        if target not in library:
            continue
        row = [r for r in rows if re.match(rf"\| `{re.escape(target)}`", r)]
        assert row and f"`{alias}`" in row[0], f"alias {alias} of {target}"
    for abbrev in names.SCIPY_ABBREVIATIONS:
        assert f"`{abbrev}`" in PAGE.read_text(encoding="utf-8"), abbrev


def test_refused_names_are_documented():
    text = PAGE.read_text(encoding="utf-8")
    for name in names.NOT_HERE:
        assert any(r.startswith(f"| `{name}` |") for r in _rows()), name
    for name in colparams.NOT_WEIGHTED:
        assert f"`{name}`" in text.split("#### Weights gbdist cannot apply")[1].split("###")[0]
    for metric, weighted in colparams.WEIGHTED.items():
        row = [r for r in _rows() if r.startswith(f"| `{weighted}` |")]
        assert row and f"`{metric}`" in row[0], (metric, weighted)
