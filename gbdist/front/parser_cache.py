"""The lark parser's tables on disk, so a new process loads them instead of
rebuilding them from the grammar.

Building the LALR parser for ``grammar/gbdist.lark`` (lark's grammar analysis
and table construction) costs about 0.2-0.6 s of CPU per process; loading the
tables costs a few milliseconds (docs/cpu.md, "Start-up"). lark's own
``cache=`` option would store them with ``pickle``; gbdist unpickles nothing
from its cache directory, so the tables are stored as JSON instead: lark's
``memo_serialize`` gives plain data (dicts with int or str keys, lists,
tuples, strings, integers, booleans, None), which :func:`encode` writes
losslessly (tuples and int-keyed dicts are tagged) and :func:`decode` reads
back for ``Lark.load``, which rebuilds the parser from that data without
running any code from it.

Location: ``gbdist.paths.cache_dir("parser")`` (``$GBDIST_CACHE_DIR/parser``, by default
under the platform's user cache directory); ``GBDIST_CACHE_DIR=off`` disables it.

* The file name is a SHA-256 over the grammar text, the options, lark's version,
  gbdist's version and :data:`FORMAT`: a changed grammar or upgrade misses.
* An entry carries a digest of its key and content (catches truncation and bit
  rot), is read only if it is a regular file of at most :data:`MAX_BYTES`
  (no FIFO, device or symlink), and the loaded parser must parse a probe text
  to the same tree as the freshly built one would (:data:`PROBE`). Any failure
  is a miss: the parser is built from the grammar and the entry rewritten.
* Written atomically (a temporary file renamed into place): concurrent
  processes are safe.
"""
from __future__ import annotations

import hashlib
import json
import logging
import os
import stat
import tempfile
from pathlib import Path

from .. import paths
from ..version import __version__

FORMAT = 1
MAX_BYTES = 4 << 20  # the gbdist grammar's tables are about 40 KiB of JSON
MAX_DEPTH = 64  # JSON nesting
# a text and start rule the loaded parser must read as the built one did
PROBE = ("mxm(A, B.T, semiring(absdiff, plus))", "expression")

log = logging.getLogger("gbdist.cache")


class Invalid(Exception):
    """A cache entry that cannot be used (a miss, never an error the user sees)."""


def encode(x):
    """Plain Python data -> JSON-able data, tuples and non-string dict keys tagged."""
    if x is None or isinstance(x, (bool, int, str)):
        return x
    if isinstance(x, float):
        raise Invalid("floats are not expected in parser tables")
    if isinstance(x, list):
        return [encode(v) for v in x]
    if isinstance(x, tuple):
        return {"t": [encode(v) for v in x]}
    if isinstance(x, dict):
        return {"d": [[encode(k), encode(v)] for k, v in x.items()]}
    raise Invalid(f"unexpected value of type {type(x).__name__} in the parser tables")


def decode(x, depth: int = 0):
    """The inverse of :func:`encode`; refuses anything :func:`encode` cannot write."""
    if depth > MAX_DEPTH:
        raise Invalid("the cache entry nests too deeply")
    if x is None or isinstance(x, (bool, int, str)):
        return x
    if isinstance(x, list):
        return [decode(v, depth + 1) for v in x]
    if isinstance(x, dict) and len(x) == 1:
        if isinstance(x.get("t"), list):
            return tuple(decode(v, depth + 1) for v in x["t"])
        if isinstance(x.get("d"), list):
            out = {}
            for kv in x["d"]:
                if not (isinstance(kv, list) and len(kv) == 2):
                    raise Invalid("a malformed dictionary item")
                k = decode(kv[0], depth + 1)
                if not isinstance(k, (str, int, tuple)):
                    raise Invalid("a malformed dictionary key")
                out[k] = decode(kv[1], depth + 1)
            return out
    raise Invalid("a value of an unexpected shape")


def key(grammar: str, options: dict) -> str:
    import lark
    text = json.dumps([FORMAT, __version__, lark.__version__, grammar, repr(sorted(options.items()))])
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


def _path(k: str) -> Path | None:
    d = paths.cache_dir("parser")
    return None if d is None else d / f"lalr-{k}.json"


def _digest(k: str, body: str) -> str:
    return hashlib.sha256(f"{k}\n{body}".encode("utf-8")).hexdigest()


def _read_capped(path: Path) -> bytes:
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0)
    fd = os.open(path, flags)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_BYTES:
            raise Invalid("the cache entry is not a regular file of a sensible size")
        data = os.read(fd, MAX_BYTES + 1)
        if len(data) > MAX_BYTES:
            raise Invalid("the cache entry is too large")
        return data
    finally:
        os.close(fd)


def _probe(parser) -> list:
    """The probe text's parse tree as plain lists: rule names, token types, values, positions."""
    def plain(node):
        if hasattr(node, "data"):
            return [str(node.data), [plain(c) for c in node.children]]
        if node is None:
            return None
        return [node.type, str(node), node.line, node.column]
    return plain(parser.parse(PROBE[0], start=PROBE[1]))


def load(grammar: str, options: dict):
    """The parser stored for this grammar and these options, or None (a miss)."""
    k = key(grammar, options)
    path = _path(k)
    if path is None:
        return None
    try:
        raw = _read_capped(path)
    except FileNotFoundError:
        return None
    except (OSError, Invalid):
        log.warning("ignoring the unreadable parser cache entry %s", path)
        return None
    try:
        from lark import Lark
        entry = json.loads(raw.decode("utf-8"))
        if not (isinstance(entry, dict) and entry.get("key") == k and isinstance(entry.get("body"), str)):
            raise Invalid("the entry's key does not match its name")
        if entry.get("digest") != _digest(k, entry["body"]):
            raise Invalid("the entry's digest does not match its content")
        data = decode(json.loads(entry["body"]))
        if not (isinstance(data, dict) and set(data) == {"data", "memo"}):
            raise Invalid("the entry does not hold parser tables")
        parser = Lark.load(data)
        if _probe(parser) != entry.get("probe"):
            raise Invalid("the loaded parser reads the probe text differently")
        return parser
    except Exception as e:  # noqa: BLE001 - anything at all in an entry is a miss
        log.warning("ignoring the parser cache entry %s: %s", path, e)
        return None


def store(grammar: str, options: dict, parser) -> None:
    """Write the parser's tables for later processes (silently skipped if impossible)."""
    k = key(grammar, options)
    path = _path(k)
    if path is None:
        return
    try:
        from lark.grammar import Rule
        from lark.lexer import TerminalDef
        data, memo = parser.memo_serialize([TerminalDef, Rule])
        body = json.dumps(encode({"data": data, "memo": memo}), separators=(",", ":"))
        entry = json.dumps({"key": k, "digest": _digest(k, body), "body": body,
                            "probe": _probe(parser)})
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".json")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(entry)
            os.replace(tmp, path)
        except BaseException:
            os.unlink(tmp)
            raise
    except (OSError, Invalid) as e:  # a read-only cache or unexpected tables: build each time
        log.debug("not caching the parser: %s", e)


def cached_lark(grammar: str, **options):
    """``Lark(grammar, **options)`` (LALR), loaded from the cache when an entry is there."""
    parser = load(grammar, options)
    if parser is None:
        from lark import Lark
        parser = Lark(grammar, **options)
        store(grammar, options, parser)
    return parser
