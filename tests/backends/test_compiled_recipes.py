"""Stored recipes of generated modules (gbdist.backends.compiled.cache.load_recipe, issue
28): a module found again from its record without generating its source (no sympy), and
every damage (a record naming a missing or edited file, a damaged record) a miss that
generates the module again."""
from __future__ import annotations

import pytest

pytest.importorskip("numba")

from gbdist.backends.compiled import cache  # noqa: E402

CODE = ("backends/compiled/cache.py",)


@pytest.fixture
def store(tmp_path, monkeypatch):
    monkeypatch.setenv("GBDIST_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(cache, "_MODULES", {})
    return tmp_path


def _generator(calls, value):
    def generate():
        calls.append(value)
        return f"# a recipe test\nVALUE = {value}\n"
    return generate


def test_a_stored_recipe_is_found_without_generating(store):
    calls = []
    mod = cache.load_recipe(("r", 1), CODE, _generator(calls, 7))
    assert mod.VALUE == 7 and calls == [7]
    cache._MODULES.clear()  # as a new process: only the disk is left
    again = cache.load_recipe(("r", 1), CODE, _generator(calls, 8))
    assert again.VALUE == 7 and calls == [7]  # the stored module, not generated again
    other = cache.load_recipe(("r", 2), CODE, _generator(calls, 9))  # another recipe
    assert other.VALUE == 9 and calls == [7, 9]


@pytest.mark.parametrize("damage", ["edit-module", "remove-module", "edit-record"])
def test_damage_is_a_miss_that_generates_again(store, damage):
    calls = []
    cache.load_recipe(("r", 1), CODE, _generator(calls, 7))
    cache._MODULES.clear()
    module, = (store / "cpu").glob("gb_*.py")
    record, = (store / "programs").glob("*.json")
    if damage == "edit-module":
        module.write_text("VALUE = 666\n")
    elif damage == "remove-module":
        module.unlink()
    else:
        record.write_text(record.read_text().replace(module.stem[3:], "0" * 24))
    mod = cache.load_recipe(("r", 1), CODE, _generator(calls, 7))
    assert mod.VALUE == 7 and calls == [7, 7]
