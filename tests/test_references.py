"""Every ``module.name`` a gbdist module reads from another gbdist module it imported by
name (``from . import strategies`` … ``strategies.choose``) names something that module
has. Such a read fails only when the line runs, and many run only on a GPU: a name moved
by a refactor (``strategies.Kept`` after the split into ``jobs``/``dense_strategies``)
passed every host test and broke every CUDA call. This finds it on any machine.
"""
from __future__ import annotations

import ast
import importlib
import importlib.util
from pathlib import Path

from test_architecture import imported_module

PACKAGE = Path(__file__).resolve().parent.parent / "gbdist"


def _module_aliases(path: Path, tree: ast.AST) -> dict[str, str]:
    """Local name -> the gbdist module it is bound to by an import statement."""
    here = list(path.relative_to(PACKAGE.parent).with_suffix("").parts[:-1])
    out = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            mod = imported_module(node, here)
            if not mod.startswith("gbdist"):
                continue
            for a in node.names:
                full = f"{mod}.{a.name}"
                if _importable(full):
                    out[a.asname or a.name] = full
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name.startswith("gbdist.") and a.asname:
                    out[a.asname] = a.name
    return out


def _importable(mod: str) -> bool:
    try:
        return importlib.util.find_spec(mod) is not None
    except (ImportError, ValueError):
        return False


def _rebound(tree: ast.AST) -> set[str]:
    """Names the module also binds otherwise (assignments, arguments, loop targets):
    a read of such a name may not be the module."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            out.add(node.id)
        elif isinstance(node, ast.arg):
            out.add(node.arg)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(node.name)
    return out


def missing_references(paths) -> list[str]:
    bad = []
    for path in paths:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        aliases = _module_aliases(path, tree)
        for name in _rebound(tree):
            aliases.pop(name, None)
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load)
                    and isinstance(node.value, ast.Name) and node.value.id in aliases):
                continue
            target = aliases[node.value.id]
            module = importlib.import_module(target)
            if hasattr(module, node.attr) or _importable(f"{target}.{node.attr}"):
                continue
            bad.append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno}: {target}.{node.attr}")
    return bad


def test_every_module_attribute_read_exists():
    bad = missing_references(sorted(PACKAGE.rglob("*.py")))
    assert not bad, "names read from gbdist modules that do not have them:\n" + "\n".join(bad)


def test_the_check_finds_a_moved_name(tmp_path):
    pkg = PACKAGE / "backends" / "cuda"
    probe = pkg / "_reference_probe_test.py"  # inside the package: its relative imports resolve
    probe.write_text("from . import strategies\n\ndef f():\n    return strategies.Kept()\n",
                     encoding="utf-8")
    try:
        bad = missing_references([probe])
    finally:
        probe.unlink()
    assert bad == ["gbdist/backends/cuda/_reference_probe_test.py:4: "
                   "gbdist.backends.cuda.strategies.Kept"]
