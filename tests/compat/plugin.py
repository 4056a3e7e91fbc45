"""A pytest plugin that runs scikit-learn's and SciPy's own tests with calls routed to gbdist.

Load it with ``-p compat.plugin`` while running the peers' installed test
files (``--pyargs sklearn.metrics.tests.test_pairwise`` ...). The modules of
:data:`routing.MODULES` are routed BEFORE they are imported: an import hook runs each
with builtins whose ``__import__`` hands its ``from <peer module> import <name>``
statements the adapters of :mod:`tests.compat.routing` (``GBDIST_ROUTE=0``: no hook,
the peers' own run). So whatever the module builds at import time (SciPy's
weight-checking wrappers ``wcdist``, ``wpdist``, ``wcityblock`` ...) wraps the adapters,
while the peer modules themselves (what their own code and every other importer call)
are left alone. The plugin counts the calls gbdist answered per test; in SciPy's out=
tests a call without out= is SciPy's own (the reference the out= answer is compared
with). With ``GBDIST_ROUTE_REPORT=path`` it writes one JSON line per test: node id,
outcome, routed calls, and the first line of the failure.
"""
from __future__ import annotations

import importlib.abc
import json
import os
import re
import sys

import pytest

from . import routing

_RESULTS: dict = {}
_NAMES: dict = {}  # pytest node id -> "file name::test id"
# SciPy's out= tests: the call without out= is SciPy's, the one with out= gbdist's
_OUT_TESTS = re.compile(r"test_[cp]dist_out\b")


class _RoutedLoader(importlib.abc.Loader):
    """The loader found for a peer's test module, run with the routed builtins."""

    def __init__(self, loader, name: str):
        self._loader, self._name = loader, name

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module):
        module.__dict__["__builtins__"] = routing.routed_builtins(self._name)
        self._loader.exec_module(module)
        routing.after_import(module)

    def __getattr__(self, attr):  # get_source, get_filename ... as the wrapped loader's
        return getattr(self._loader, attr)


class _RoutedFinder(importlib.abc.MetaPathFinder):
    """Finds a peer's test module as the other finders do (pytest's assertion rewriting
    included), then wraps its loader."""

    def find_spec(self, fullname, path, target=None):
        if fullname not in routing.MODULES:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None:
                spec.loader = _RoutedLoader(spec.loader, fullname)
                return spec
        return None


_FINDER = _RoutedFinder()


def _routing() -> bool:
    return os.environ.get("GBDIST_ROUTE") != "0"


def pytest_configure(config):
    """Put the finder first (after pytest installed its assertion rewriting), before any
    test module is collected."""
    if _routing() and _FINDER not in sys.meta_path:
        sys.meta_path.insert(0, _FINDER)


def pytest_unconfigure(config):
    if _FINDER in sys.meta_path:
        sys.meta_path.remove(_FINDER)


def pytest_collection_modifyitems(items):
    for item in items:
        _NAMES[item.nodeid] = f"{item.path.name}::{item.nodeid.split('::', 1)[-1]}"


@pytest.fixture(autouse=True)
def _count_routed_calls(request):
    module = getattr(request, "module", None)
    name = getattr(module, "__name__", "")
    if name not in routing.MODULES or not _routing():
        yield
        return
    routing.COUNT["calls"] = 0
    routing.REFERENCE["unless_out"] = bool(_OUT_TESTS.search(request.node.name))
    bare = routing.subjects(_NAMES.get(request.node.nodeid, request.node.nodeid))
    saved = {n: module.__dict__[n] for n in bare}
    module.__dict__.update({n: routing.PER_PAIR[n] for n in bare})
    try:
        yield
    finally:
        routing.REFERENCE["unless_out"] = False
        module.__dict__.update(saved)
    _RESULTS.setdefault(_NAMES.get(request.node.nodeid, request.node.nodeid), {})["routed"] = \
        routing.COUNT["calls"]


def _message(text: str) -> str:
    """A failure's message on one line: its nonempty lines joined, at most 300 characters,
    then NumPy's "Max ... difference" lines (the largest difference, which known.py's
    tolerances read)."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    head = " | ".join(lines)[:300]
    return " | ".join([head] + [line for line in lines if line.startswith("Max ")])


def pytest_runtest_logreport(report):
    entry = _RESULTS.setdefault(_NAMES.get(report.nodeid, report.nodeid), {})
    if report.when == "call" or (report.when == "setup" and report.outcome != "passed"):
        entry["outcome"] = report.outcome
        if report.failed:
            crash = getattr(report.longrepr, "reprcrash", None)
            entry["message"] = _message(crash.message if crash else str(report.longrepr))
    elif report.when == "teardown" and report.failed and entry.get("outcome") == "passed":
        entry["outcome"] = "failed"
        entry["message"] = str(report.longrepr).split("\n")[-1]


def pytest_sessionfinish(session):
    path = os.environ.get("GBDIST_ROUTE_REPORT")
    if not path:
        return
    with open(path, "w") as f:
        for nodeid, entry in _RESULTS.items():
            if "outcome" in entry:
                f.write(json.dumps({"nodeid": nodeid, **entry}) + "\n")
