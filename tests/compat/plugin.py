"""A pytest plugin that runs scikit-learn's and SciPy's own tests with calls routed to gbdist.

Load it with ``-p tests.compat.plugin`` while running the peers' installed test
files (``--pyargs sklearn.metrics.tests.test_pairwise`` ...). For each test of a
module in :data:`routing.MODULES` it replaces the module's globals by the
adapters of :mod:`tests.compat.routing` (``GBDIST_ROUTE=0``: no replacement,
the peers' own run) and counts the calls gbdist answered. With
``GBDIST_ROUTE_REPORT=path`` it writes one JSON line per test: node id,
outcome, routed calls, and the first line of the failure.
"""
from __future__ import annotations

import json
import os

import pytest

from . import routing

_RESULTS: dict = {}
_NAMES: dict = {}  # pytest node id -> "file name::test id"


def pytest_collection_modifyitems(items):
    for item in items:
        _NAMES[item.nodeid] = f"{item.path.name}::{item.nodeid.split('::', 1)[-1]}"


@pytest.fixture(autouse=True)
def _route_to_gbdist(request, monkeypatch):
    module = getattr(request, "module", None)
    name = getattr(module, "__name__", "")
    if name not in routing.MODULES or os.environ.get("GBDIST_ROUTE") == "0":
        yield
        return
    for attr, value in routing.routes(name).items():
        monkeypatch.setattr(module, attr, value)
    routing.COUNT["calls"] = 0
    yield
    _RESULTS.setdefault(_NAMES.get(request.node.nodeid, request.node.nodeid), {})["routed"] = \
        routing.COUNT["calls"]


def pytest_runtest_logreport(report):
    entry = _RESULTS.setdefault(_NAMES.get(report.nodeid, report.nodeid), {})
    if report.when == "call" or (report.when == "setup" and report.outcome != "passed"):
        entry["outcome"] = report.outcome
        if report.failed:
            crash = getattr(report.longrepr, "reprcrash", None)
            entry["message"] = (crash.message if crash else str(report.longrepr)).split("\n")[0]
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
