"""The package's shape, read from its own imports: stages in one direction, no circles.

Every import statement of every module under gbdist/ counts, function-level ones
included (an import deferred to call time is still a dependency); only imports
under ``if TYPE_CHECKING:`` are left out (they never run). docs/architecture.md
describes the stages this test holds the code to.
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "gbdist"

# Stages from the bottom up: a module may import its own stage or a lower one.
STAGES = [
    ("foundation", ("gbdist.errors", "gbdist.paths", "gbdist.resources", "gbdist.version")),
    ("algebra", ("gbdist.algebra",)),
    ("compiler", ("gbdist.compiler",)),
    ("names", ("gbdist.names",)),
    ("backends", ("gbdist.backends",)),
    ("inputs", ("gbdist.inputs",)),
    ("runtime", ("gbdist.runtime",)),
    ("front", ("gbdist.front",)),
    ("user API", ("gbdist.pairwise", "gbdist.io", "gbdist.graph")),
    ("neighbors", ("gbdist.neighbors",)),
    ("distributed", ("gbdist.dask",)),  # user API over Dask; builds on neighbors
    ("cli", ("gbdist.cli",)),
    ("package", ("gbdist", "gbdist.__main__")),
    ("algorithms", ("gbdist.algorithms",)),  # written with the public API only
]
MAX_LINES = 500


def _modules() -> dict[str, Path]:
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE.parent).with_suffix("")
        parts = list(rel.parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


MODULES = _modules()


def _is_package(name: str) -> bool:
    return MODULES[name].name == "__init__.py"


def _type_checking_lines(tree: ast.AST) -> set[int]:
    skip = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for sub in node.body:
                skip.update(range(sub.lineno, (sub.end_lineno or sub.lineno) + 1))
    return skip


def imports_of(name: str) -> set[str]:
    """The gbdist modules ``name`` imports (a package's ``__init__`` counts as a module)."""
    path = MODULES[name]
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skip = _type_checking_lines(tree)
    here = name.split(".") if _is_package(name) else name.split(".")[:-1]
    found = set()
    for node in ast.walk(tree):
        if getattr(node, "lineno", None) in skip:
            continue
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name == "gbdist" or a.name.startswith("gbdist."):
                    found.add(_owner(a.name))
        elif isinstance(node, ast.ImportFrom):
            mod = imported_module(node, here)
            if not (mod == "gbdist" or mod.startswith("gbdist.")):
                continue
            for a in node.names:
                sub = f"{mod}.{a.name}"
                found.add(sub if sub in MODULES else _owner(mod))
    found.discard(name)
    return found


def imported_module(node: ast.ImportFrom, here: list) -> str:
    """The module a ``from ... import`` statement names, a relative one resolved against the
    package ``here`` (its dotted parts)."""
    if node.level:
        base = here[: len(here) - (node.level - 1)]
        return ".".join(base + ([node.module] if node.module else []))
    return node.module or ""


def _owner(mod: str) -> str:
    while mod not in MODULES and "." in mod:
        mod = mod.rsplit(".", 1)[0]
    return mod


def stage_of(name: str) -> int:
    best, rank = -1, None
    for i, (_, prefixes) in enumerate(STAGES):
        for p in prefixes:
            if (name == p or name.startswith(p + ".")) and len(p) > best:
                best, rank = len(p), i
    if rank is None:
        raise AssertionError(f"{name} belongs to no stage: add it to STAGES and docs/architecture.md")
    return rank


GRAPH = {name: imports_of(name) for name in MODULES}


def test_every_module_has_a_stage():
    for name in MODULES:
        stage_of(name)


def test_imports_run_downward():
    upward = []
    for name, deps in GRAPH.items():
        for dep in deps:
            if stage_of(dep) > stage_of(name):
                upward.append(f"{name} ({STAGES[stage_of(name)][0]}) imports {dep} "
                              f"({STAGES[stage_of(dep)][0]})")
    assert not upward, "imports from a lower stage up to a higher one:\n" + "\n".join(sorted(upward))


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_no_import_circles():
    # A package importing its own submodules (its __init__ re-exporting them) is not a
    # circle unless a submodule imports the package back, which the graph would show.
    assert _cycles(GRAPH) == []


def test_cycle_finder_finds_a_circle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


@pytest.mark.parametrize("name", sorted(MODULES))
def test_modules_stay_readable(name):
    path = MODULES[name]
    text = path.read_text(encoding="utf-8")
    lines = text.count("\n")
    if lines <= MAX_LINES:
        return
    doc = ast.get_docstring(ast.parse(text)) or ""
    assert "Longer than 500 lines" in doc, (
        f"{path.relative_to(PACKAGE.parent)} has {lines} lines: split it, or say in its "
        "docstring why it is one piece ('Longer than 500 lines: <reason>')")


def test_packages_are_shipped():
    """Every sub-package is listed in pyproject.toml, so the wheel has it."""
    import re
    text = (PACKAGE.parent / "pyproject.toml").read_text(encoding="utf-8")
    listed = set(re.findall(r'"(gbdist[\w.]*)"', text.split("packages =", 1)[1].split("]", 1)[0]))
    packages = {n for n in MODULES if _is_package(n)}
    assert packages <= listed, sorted(packages - listed)
