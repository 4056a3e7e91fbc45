"""A graph definition drawn (issue 27): the plan of a graph definition — its steps, masks,
which step feeds which, a loop as a box round its body titled with its stop test — as SVG
or PNG, from ``gb.explain(name)`` and from ``gbdist explain NAME -o FILE.svg``."""
from __future__ import annotations

import html
import re

import pytest

import gbdist as gb
from gbdist.cli.main import main
from gbdist.front.library import find_graph

pytest.importorskip("matplotlib")


def _svg_text(svg: str) -> str:
    """Every text element of the SVG, unescaped, one per line."""
    return "\n".join(html.unescape(t) for t in re.findall(r"<text[^>]*>([^<]*)</text>", svg))


def _steps(g, prefix=""):
    """(number, text) of every step a picture must show, loop bodies included."""
    for s in g.steps:
        if s.operation == "loop":
            yield from _steps(s.loop.graph(g.name), f"{prefix}{s.index + 1}.")
        elif s.operation != "loop_value":
            yield f"{prefix}{s.index + 1}", g.step_text(s)


@pytest.mark.parametrize("name", ["triangle_count", "bfs_levels", "pagerank"])
def test_the_picture_shows_every_step(name):
    g = find_graph(name)
    svg = gb.explain(name).picture("svg").decode("utf-8")
    texts = _svg_text(svg)
    steps = list(_steps(g))
    assert len(steps) >= 3
    for number, text in steps:
        assert f"step {number}:" in texts and text in texts, (number, text)
        assert f'id="step-{number}"' in svg
    for o in g.operands:
        assert f'id="operand-{o}"' in svg
    assert 'id="result"' in svg


def test_a_loop_is_a_box_round_its_body_with_its_stop_test():
    svg = gb.explain("bfs_levels").picture("svg").decode("utf-8")
    assert 'id="loop-2"' in svg
    assert "loop 2: until empty(f)" in _svg_text(svg)
    d = gb.explain("bfs_levels").diagram()
    loop = next(grp for grp in d.groups if grp.id == "loop-2")
    assert set(loop.members) >= {"step-2.1", "step-2.2", "step-2.3", "carried-2-f", "carried-2-levels"}
    kinds = {(e.source, e.target): e.kind for e in d.edges}
    assert kinds[("carried-2-levels", "step-2.1")] == "mask"     # mask=not levels.S
    assert kinds[("step-2.2", "carried-2-f")] == "next"          # f = the apply, next round
    assert kinds[("operand-A", "step-2.1")] == "input"
    pr = gb.explain("pagerank").picture("svg").decode("utf-8")
    assert "loop 12: until err < ntol or empty(x)" in _svg_text(pr)


def test_triangle_count_edges_follow_the_definition():
    d = gb.explain("triangle_count").diagram()
    edges = {(e.source, e.target, e.kind) for e in d.edges}
    assert ("operand-A", "step-1", "input") in edges          # L = select(A, tril, -1)
    assert ("step-1", "step-2", "input") in edges             # mxm(L, L.T, ...)
    assert ("step-1", "step-2", "mask") in edges              # mask=L.S
    assert ("step-2", "step-3", "input") in edges             # reduce_scalar
    assert ("step-3", "result", "input") in edges


def test_the_command_line_draws_a_graph_definition(tmp_path, capsys):
    out = tmp_path / "bfs.svg"
    assert main(["explain", "bfs_levels", "-o", str(out)]) == 0
    svg = out.read_text(encoding="utf-8")
    assert 'id="loop-2"' in svg and "step 2.1:" in _svg_text(svg)
    png = tmp_path / "tri.png"
    assert main(["explain", "triangle_count", "--format", "png", "-o", str(png)]) == 0
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    page = tmp_path / "tri.html"
    assert main(["explain", "triangle_count", "-o", str(page)]) == 0
    text = page.read_text(encoding="utf-8")
    assert "<svg" in text and "mxm(L, L.T, plus_pair, mask=L.S)" in html.unescape(text)
    assert main(["explain", "triangle_count", "--format", "svg"]) != 0
    assert "needs a file" in capsys.readouterr().err
