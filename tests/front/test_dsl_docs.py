"""docs/language.md: every `gbd` block is defined, every `python` block after the
first runs (with asserts against SciPy), every `gbd-error` block raises exactly
the message in the `text` block after it."""
import re
from pathlib import Path

import pytest

import gbdist as gb

PAGE = Path(__file__).resolve().parents[2] / "docs" / "language.md"
BLOCK = re.compile(r"^```([\w-]+)\n(.*?)^```", re.S | re.M)


pytestmark = pytest.mark.usefixtures("isolated_definitions")


def blocks():
    return [(m.group(1), m.group(2)) for m in BLOCK.finditer(PAGE.read_text(encoding="utf-8"))]


def test_the_page_has_examples_of_each_kind():
    kinds = [k for k, _ in blocks()]
    assert kinds.count("gbd") >= 4 and kinds.count("gbd-error") >= 3 and kinds.count("python") >= 4


def test_examples_run_in_order():
    namespace = {"gb": gb}
    python_seen = 0
    for n, (kind, body) in enumerate(blocks()):
        if kind == "gbd":
            gb.define(body, source=f"docs/language.md block {n}")
        elif kind == "python":
            python_seen += 1
            if python_seen > 1:  # the first block is a synopsis with placeholders
                code = compile(body, f"docs/language.md block {n}", "exec")
                exec(code, namespace)  # our own documentation, not user text


ERRORS = [(body, blocks()[i + 1][1]) for i, (kind, body) in enumerate(blocks()) if kind == "gbd-error"]


@pytest.mark.parametrize("text, message", ERRORS, ids=[t.split("=")[0].strip() for t, _ in ERRORS])
def test_error_examples_give_the_documented_message(text, message):
    with pytest.raises(gb.GbdistError) as info:
        gb.define(text)
    assert str(info.value) == message.rstrip("\n")


def test_every_function_is_documented():
    from gbdist.front.scope import EXPR_FUNCTIONS, FORMULA_FUNCTIONS
    page = PAGE.read_text(encoding="utf-8")
    for name in set(EXPR_FUNCTIONS) | set(FORMULA_FUNCTIONS):
        assert f"`{name}(" in page or f"`{name}`" in page or f", `{name}`" in page, name
