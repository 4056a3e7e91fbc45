"""The on-disk cache of analyses, so a process does not re-run sympy for a
product it (or an earlier process) has already analysed.

Sympy trees are stored as JSON: ``[node type, args...]`` for a whitelist of
node types, rebuilt by calling those constructors. Nothing is parsed with
``sympify``/``eval``, and nothing is unpickled.

Location: ``gbdist.paths.cache_dir("analyses")``: ``$GBDIST_CACHE_DIR/analyses``,
by default under the platform's user cache directory (platformdirs: ``~/.cache/gbdist``
on Linux); ``GBDIST_CACHE_DIR=off`` disables it. Files are written atomically (a
temporary file renamed into place), so concurrent processes are safe.

What the cache trusts (the threat model)
----------------------------------------
An entry is a *hint*, never an authority. The cache directory belongs to the
user, so a person who can write it can also edit gbdist itself; the cache does
not try to stop a determined attacker. It does guarantee that nothing in an
entry can make gbdist run code, hang, exhaust memory or crash, and it catches
corrupt, stale and naively or even carefully edited entries before they can
change an answer:

1. **Reading is bounded.** Only a regular file is read (opened with
   ``O_NONBLOCK``/``O_NOFOLLOW``, checked with ``fstat``), at most
   :data:`MAX_BYTES` bytes; a FIFO, a device such as ``/dev/zero`` or a
   symlink is a miss. The JSON is then walked iteratively and refused if it
   nests deeper than :data:`MAX_DEPTH`, holds more than :data:`MAX_NODES`
   values, integers longer than :data:`MAX_DIGITS` digits, a numeric power
   with an exponent over :data:`MAX_EXPONENT`, or a node type outside the
   whitelist. Any exception at all while loading (``RecursionError``,
   ``MemoryError``, ``UnicodeDecodeError``, ...) makes the entry a miss.
2. **Integrity.** Each entry carries a SHA-256 digest over its key, the
   gbdist and sympy versions (also part of the key) and its content. It catches
   truncation, bit rot and entries copied under another key. A digest is no
   defence against a person who recomputes it, hence 3.
3. **Consistency with the op** (``gbdist.compiler.analysis.verify``, beside the analysis
   it checks). Before an entry is used, its claims are re-checked against the semiring's formula ``f`` (which comes from the
   caller, never from the cache), in float64 with the CPU backend's own
   evaluator, at a grid of points: fixed points, the constants that appear
   in ``f`` and the fills, and a few points drawn fresh in every process
   (``random.SystemRandom``), so a crafted entry cannot aim at the seeds. The
   checks: the fills are the requested ones; ``L = f(x, zb)``,
   ``R = f(za, y)`` and ``C = f(za, zb)``; the strategy is one whose rewrite
   is valid for this op (``intersection``: L and R are the identity of ⊕, or
   the semiring is structural; ``union-correction``: ⊕ is plus and
   ``g = f − L − R + C``; ``two-pass-union``: ⊕ is idempotent and ``g = f``);
   the expansion sums to g and each factor reads one side only; a
   ``nonnegative`` flag matches ``f ≥ 0``; a ``corner_absorbed`` flag matches
   ``⊕(C, f) = f``. Points where the op's value is not finite are skipped
   (sympy may legitimately rewrite a formula there). This is a cheap test,
   not a proof: an entry that differs from the truth only on a set the grid
   misses (say at one crafted point) can pass. The proofs stored in an entry
   are shown by ``explain`` but never decide anything.

A check that fails logs a warning on the ``gbdist.cache`` logger; the product
is analysed again and the entry overwritten. If a fresh analysis itself fails
check 3 (an op whose values sympy's simplification changes at the sample
points), it is used but not cached.
"""
from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import stat
import tempfile
from pathlib import Path

import sympy as sp

from ..algebra.formulas import building

FORMAT = 2  # 2: formulas are stored and rebuilt as written (no sympy evaluation)

MAX_BYTES = 1 << 20  # an analysis entry is a few KiB
MAX_DEPTH = 64  # JSON nesting
MAX_NODES = 20_000  # JSON values in one entry
MAX_ARGS = 256  # arguments of one sympy node
MAX_DIGITS = 100  # digits of one integer (numerator, denominator)
MAX_EXPONENT = 64  # |n| in a power of a number to an integer n
MAX_TEXT = 4_000  # characters of one string (claims, reasons)

log = logging.getLogger("gbdist.cache")

_CLASSES = {
    "Add": sp.Add, "Mul": sp.Mul, "Pow": sp.Pow, "Abs": sp.Abs, "log": sp.log, "exp": sp.exp,
    "Max": sp.Max, "Min": sp.Min, "sign": sp.sign, "Equality": sp.Eq, "Unequality": sp.Ne,
    "StrictLessThan": sp.StrictLessThan, "LessThan": sp.LessThan,
    "StrictGreaterThan": sp.StrictGreaterThan, "GreaterThan": sp.GreaterThan,
    "And": sp.And, "Or": sp.Or, "Not": sp.Not,
}
_ARITY = {"Pow": 2, "Abs": 1, "log": 1, "exp": 1, "sign": 1, "Not": 1, "Equality": 2,
          "Unequality": 2, "StrictLessThan": 2, "LessThan": 2, "StrictGreaterThan": 2,
          "GreaterThan": 2}
_CONSTANTS = {
    "Infinity": sp.oo, "NegativeInfinity": -sp.oo, "ComplexInfinity": sp.zoo, "NaN": sp.nan,
    "BooleanTrue": sp.true, "BooleanFalse": sp.false, "Exp1": sp.E, "Pi": sp.pi,
    "Zero": sp.Integer(0), "One": sp.Integer(1), "NegativeOne": sp.Integer(-1), "Half": sp.Rational(1, 2),
}
_SYMBOL_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,31}")
_INTEGER = re.compile(r"-?[0-9]{1,%d}" % MAX_DIGITS)
_FLOAT = re.compile(r"-?(inf|nan|[0-9.eE+-]{1,40})")


class Unsupported(Exception):
    """A tree holds a node type the cache does not store (then it is not cached)."""


class Invalid(ValueError):
    """A cache entry is unreadable, over a limit, or inconsistent with the op."""


def encode(e) -> list:
    """A sympy tree as nested JSON lists."""
    name = type(e).__name__
    if name in _CONSTANTS:
        return [name]
    if isinstance(e, sp.Symbol):
        return ["Symbol", e.name, bool(e.is_nonnegative) and e.assumptions0.get("nonnegative", False)]
    if isinstance(e, sp.Rational) and len(str(max(abs(e.p), e.q))) > MAX_DIGITS:
        raise Unsupported("a number longer than the cache reads back (1e-310 as an exact fraction)")
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


def _int(text) -> int:
    if not isinstance(text, str) or not _INTEGER.fullmatch(text):
        raise Invalid("an integer in the cache entry is malformed or too long")
    return int(text)


def decode(t: list):
    """The inverse of :func:`encode`; raises ValueError on anything unexpected.

    Recursive, so callers bound the depth first (:func:`check_shape` does).
    """
    if not isinstance(t, list) or not t or not isinstance(t[0], str):
        raise Invalid("malformed cache entry")
    name, args = t[0], t[1:]
    if len(args) > MAX_ARGS:
        raise Invalid(f"node {name!r} has too many arguments")
    if name in _CONSTANTS:
        return _CONSTANTS[name]
    if name == "Symbol":
        if len(args) != 2 or not isinstance(args[0], str) or not _SYMBOL_NAME.fullmatch(args[0]):
            raise Invalid("malformed symbol in cache entry")
        return sp.Symbol(args[0], nonnegative=True) if args[1] else sp.Symbol(args[0], real=True)
    if name == "Integer":
        return sp.Integer(_int(args[0]))
    if name == "Rational":
        return sp.Rational(_int(args[0]), _int(args[1]))
    if name == "Float":
        if not isinstance(args[0], str) or not _FLOAT.fullmatch(args[0]):
            raise Invalid("malformed float in cache entry")
        return sp.Float(float(args[0]))
    if name == "Piecewise":
        pairs = []
        for a in args:
            if not isinstance(a, list) or len(a) != 2:
                raise Invalid("malformed Piecewise in cache entry")
            pairs.append((decode(a[0]), decode(a[1])))
        with building():  # rebuilt as written: x/x must not become 1
            return sp.Piecewise(*pairs)
    if name in _CLASSES:
        if name in _ARITY and len(args) != _ARITY[name]:
            raise Invalid(f"node {name!r} has the wrong number of arguments")
        values = [decode(a) for a in args]
        if name == "Pow" and values[0].is_number and values[1].is_Rational \
                and (abs(values[1].p) > MAX_EXPONENT or values[1].q > MAX_EXPONENT):
            raise Invalid("a power of a number with a huge exponent in cache entry")
        with building():
            out = _CLASSES[name](*values)
        if out.is_Rational and max(abs(out.p), out.q).bit_length() > _MAX_BITS:
            raise Invalid("a number in the cache entry is too large")
        return out
    raise Invalid(f"node type {name!r} is not allowed in the cache")


_MAX_BITS = 8 * MAX_DIGITS  # a computed number may be somewhat larger than a stored one


def check_shape(value) -> None:
    """Refuse JSON that nests deeper than MAX_DEPTH or holds more than MAX_NODES
    values or over-long strings (walked iteratively: no recursion)."""
    stack = [(value, 1)]
    count = 0
    while stack:
        v, depth = stack.pop()
        count += 1
        if count > MAX_NODES:
            raise Invalid("the cache entry is too large")
        if depth > MAX_DEPTH:
            raise Invalid("the cache entry nests too deeply")
        if isinstance(v, list):
            stack.extend((c, depth + 1) for c in v)
        elif isinstance(v, dict):
            stack.extend((c, depth + 1) for c in v.values())
        elif isinstance(v, str) and len(v) > MAX_TEXT:
            raise Invalid("a string in the cache entry is too long")
        elif isinstance(v, int) and not isinstance(v, bool) and abs(v) > 10 ** 18:
            raise Invalid("an integer in the cache entry is too large")


def directory() -> Path | None:
    """Where analyses are stored, or None when caching is off (:mod:`gbdist.paths`)."""
    from ..paths import cache_dir
    return cache_dir("analyses")


def _versions() -> list:
    from ..version import __version__
    return [FORMAT, __version__, sp.__version__]


def key_of(*parts) -> str:
    text = json.dumps(_versions() + [repr(p) for p in parts])
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def digest(key: str, record: dict) -> str:
    """The integrity digest of an entry: its key, the versions and its content."""
    body = {k: v for k, v in record.items() if k != "digest"}
    text = json.dumps([key, _versions(), body], sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def _read_capped(path: Path) -> bytes:
    """The bytes of a regular file, at most MAX_BYTES; raises Invalid/OSError otherwise."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0)
    fd = os.open(path, flags)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise Invalid("the cache entry is not a regular file")
        if st.st_size > MAX_BYTES:
            raise Invalid("the cache entry is too large")
        chunks, total = [], 0
        while total <= MAX_BYTES:
            chunk = os.read(fd, min(65536, MAX_BYTES + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
        if total > MAX_BYTES:
            raise Invalid("the cache entry is too large")
        return b"".join(chunks)
    finally:
        os.close(fd)


def load(key: str) -> dict | None:
    """The entry stored under ``key``, shape- and digest-checked, or None (a miss).

    Never raises: any failure is a miss (logged when a file was there but bad).
    """
    d = directory()
    if d is None:
        return None
    path = d / f"{key}.json"
    try:
        data = _read_capped(path)
    except FileNotFoundError:
        return None
    except Exception as e:  # noqa: BLE001 - a cache problem must never become the user's
        _warn(key, e)
        return None
    try:
        record = json.loads(data.decode("utf-8"))
        if not isinstance(record, dict):
            raise Invalid("the cache entry is not a JSON object")
        check_shape(record)
        if record.get("digest") != digest(key, record):
            raise Invalid("the integrity digest does not match (a corrupt, stale or edited entry)")
        return record
    except Exception as e:  # noqa: BLE001
        _warn(key, e)
        return None


def _warn(key: str, e: BaseException) -> None:
    log.warning("gbdist analysis cache: discarding entry %s (%s: %s); analysing again",
                key, type(e).__name__, str(e)[:200])


def discard(key: str, e: BaseException) -> None:
    """Log that a loaded entry failed its checks (it is overwritten by the next store)."""
    _warn(key, e)


def store(key: str, record: dict) -> None:
    d = directory()
    if d is None:
        return
    record = dict(record)
    try:
        check_shape(record)  # what load() would refuse is not written
    except Invalid:
        return
    record["digest"] = digest(key, record)
    tmp = None
    try:
        d.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=d, suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(record, f)
        os.replace(tmp, d / f"{key}.json")
        tmp = None
    except OSError:
        pass  # a read-only home directory only costs the re-analysis
    finally:
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass


def remembered(memo: dict, name: str, fmt: int, key, decode, compute, encode):
    """The value for ``key``: from the process-wide ``memo``, else decoded from its on-disk
    record (``name``, ``fmt``, ``key``), else computed and written to both. ``decode``
    raises TypeError, KeyError or ValueError on a missing or malformed record (a miss)."""
    value = memo.get(key)
    if value is None:
        disk = key_of(name, fmt, key)
        try:
            value = decode(load(disk))
        except (TypeError, KeyError, ValueError):
            value = compute()
            store(disk, encode(value))
        memo[key] = value
    return value
