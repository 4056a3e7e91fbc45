"""The on-disk cache of analyses, so a process does not re-run sympy for a
product it (or an earlier process) has already analysed.

Sympy trees are stored as JSON: ``[node type, args...]`` for a whitelist of
node types, rebuilt by calling those constructors. Nothing is parsed with
``sympify``/``eval``, and nothing is unpickled: a tampered cache file can at
worst fail to load (then the analysis simply runs again).

Location: ``$GBDIST_CACHE_DIR/analyses`` (default ``~/.cache/gbdist``);
``GBDIST_CACHE_DIR=off`` disables it. Files are written atomically (a
temporary file renamed into place), so concurrent processes are safe.
"""
from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path

import sympy as sp

FORMAT = 2  # 2: formulas are stored and rebuilt as written (no sympy evaluation)

_CLASSES = {
    "Add": sp.Add, "Mul": sp.Mul, "Pow": sp.Pow, "Abs": sp.Abs, "log": sp.log, "exp": sp.exp,
    "Max": sp.Max, "Min": sp.Min, "sign": sp.sign, "Equality": sp.Eq, "Unequality": sp.Ne,
    "StrictLessThan": sp.StrictLessThan, "LessThan": sp.LessThan,
    "StrictGreaterThan": sp.StrictGreaterThan, "GreaterThan": sp.GreaterThan,
    "And": sp.And, "Or": sp.Or, "Not": sp.Not,
}
_CONSTANTS = {
    "Infinity": sp.oo, "NegativeInfinity": -sp.oo, "ComplexInfinity": sp.zoo, "NaN": sp.nan,
    "BooleanTrue": sp.true, "BooleanFalse": sp.false, "Exp1": sp.E, "Pi": sp.pi,
    "Zero": sp.Integer(0), "One": sp.Integer(1), "NegativeOne": sp.Integer(-1), "Half": sp.Rational(1, 2),
}


class Unsupported(Exception):
    """A tree holds a node type the cache does not store (then it is not cached)."""


def encode(e) -> list:
    """A sympy tree as nested JSON lists."""
    name = type(e).__name__
    if name in _CONSTANTS:
        return [name]
    if isinstance(e, sp.Symbol):
        return ["Symbol", e.name, bool(e.is_nonnegative) and e.assumptions0.get("nonnegative", False)]
    if isinstance(e, sp.Integer):
        return ["Integer", str(int(e))]
    if isinstance(e, sp.Rational):
        return ["Rational", str(e.p), str(e.q)]
    if isinstance(e, sp.Float):
        return ["Float", repr(float(e))]
    if isinstance(e, sp.Piecewise):
        return ["Piecewise"] + [[encode(a.expr), encode(a.cond)] for a in e.args]
    if name in _CLASSES:
        return [name] + [encode(a) for a in e.args]
    raise Unsupported(name)


def decode(t: list):
    """The inverse of :func:`encode`; raises ValueError on anything unexpected."""
    if not isinstance(t, list) or not t or not isinstance(t[0], str):
        raise ValueError("malformed cache entry")
    name, args = t[0], t[1:]
    if name in _CONSTANTS:
        return _CONSTANTS[name]
    if name == "Symbol":
        return sp.Symbol(str(args[0]), nonnegative=True) if args[1] else sp.Symbol(str(args[0]), real=True)
    if name == "Integer":
        return sp.Integer(int(args[0]))
    if name == "Rational":
        return sp.Rational(int(args[0]), int(args[1]))
    if name == "Float":
        return sp.Float(float(args[0]))
    if name == "Piecewise":
        pieces = [(decode(a), decode(c)) for a, c in args]
        with sp.evaluate(False):  # rebuilt as written: x/x must not become 1
            return sp.Piecewise(*pieces)
    if name in _CLASSES:
        items = [decode(a) for a in args]
        with sp.evaluate(False):
            return _CLASSES[name](*items)
    raise ValueError(f"node type {name!r} is not allowed in the cache")


def directory() -> Path | None:
    root = os.environ.get("GBDIST_CACHE_DIR", "")
    if root.lower() in ("off", "0", "none", "false"):
        return None
    base = Path(root) if root else Path.home() / ".cache" / "gbdist"
    return base / "analyses"


def key_of(*parts) -> str:
    from . import __version__
    text = json.dumps([FORMAT, __version__, sp.__version__] + [repr(p) for p in parts])
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def load(key: str) -> dict | None:
    d = directory()
    if d is None:
        return None
    try:
        return json.loads((d / f"{key}.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def store(key: str, record: dict) -> None:
    d = directory()
    if d is None:
        return
    try:
        d.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=d, suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(record, f)
        os.replace(tmp, d / f"{key}.json")
    except OSError:
        pass  # a read-only home directory only costs the re-analysis
