"""Records on disk: JSON files read with bounds, checked by a digest, written atomically.

The one store under every cache of analysed or derived things (the analyses of
:mod:`gbdist.compiler.cache`, the stored built-ins of :mod:`gbdist.algebra.ops` and
:mod:`gbdist.algebra.semirings`, the stored programs and explanations of
:mod:`gbdist.compiler.stored`), so that they share one set of rules
(gbdist/compiler/cache.py states the threat model):

* a file is read only if it is a regular file (``O_NONBLOCK``/``O_NOFOLLOW``,
  ``fstat``) of at most :data:`MAX_BYTES`; its JSON is walked iteratively and refused
  past :data:`MAX_DEPTH` levels, too many values or over-long strings (:func:`check_shape`);
* each record carries a SHA-256 digest over its key, the versions it depends on (gbdist's,
  sympy's: :func:`versions`) and its content: truncation, bit rot and a record copied under
  another key are misses; any exception while loading is a miss, logged on ``gbdist.cache``;
* a record is written to a temporary file renamed into place: concurrent processes are safe.

Keys are digests too (:func:`key_of`); :func:`code_digest` folds the package's own source
into a key, so a record made by other code is never read. Nothing is unpickled, nothing is
evaluated: a record holds JSON values, and formulas as checked terms
(:mod:`gbdist.algebra.terms`). Imports nothing heavy (no sympy).
"""
from __future__ import annotations

import hashlib
import json
import logging
import os
import stat
import tempfile
from pathlib import Path

from .lazy import sympy_version
from .terms import Invalid, Unsupported  # noqa: F401 (a record's errors)

FORMAT = 2  # 2: formulas are stored and rebuilt as written (no sympy evaluation)

MAX_BYTES = 1 << 20  # an analysis entry is a few KiB, a stored program some tens
MAX_DEPTH = 64  # JSON nesting
MAX_NODES = 20_000  # JSON values in one entry
MAX_TEXT = 4_000  # characters of one string (claims, reasons)

log = logging.getLogger("gbdist.cache")
_CODE: dict = {}
_CUT_SHORT = [0]  # symbolic steps stopped by their time budget in this process


def cut_short() -> int:
    """How many symbolic steps of this process have run out of their time budget so far.

    A result derived while one did depends on how loaded the machine was (sympy would
    have decided, the numeric checks did): it is used in the process, never stored. A
    caller reads this before computing and stores only if it has not moved."""
    return _CUT_SHORT[0]


def note_cut_short() -> None:
    """Count a symbolic step stopped by its time budget (:mod:`gbdist.algebra.proofs`)."""
    _CUT_SHORT[0] += 1


def code_digest(*parts: str) -> str:
    """A SHA-256 over the text of the package's own files ``parts`` (paths under gbdist/:
    a folder stands for its ``.py`` and ``.gbd`` files), read once per process: a record
    derived by that code is keyed on it, so an edited compiler never reads what the old one
    stored (the version alone does not change while gbdist is being developed)."""
    found = _CODE.get(parts)
    if found is None:
        root = Path(__file__).resolve().parent.parent
        h = hashlib.sha256()
        for part in parts:
            path = root / part
            files = sorted(p for p in path.glob("*") if p.suffix in (".py", ".gbd", ".lark")) \
                if path.is_dir() else [path]
            for f in files:
                h.update(f"{f.relative_to(root)}\n".encode())
                try:
                    h.update(f.read_bytes())
                except OSError:
                    h.update(b"<unreadable>")
        found = _CODE[parts] = h.hexdigest()
    return found


# (most JSON values, longest string) of one entry, by kind: a stored program holds a plan's
# nodes and an explanation's text (gbdist.compiler.stored)
LIMITS = {"analyses": (MAX_NODES, MAX_TEXT), "programs": (200_000, 1 << 18)}


def check_shape(value, kind: str = "analyses") -> None:
    """Refuse JSON that nests deeper than MAX_DEPTH or holds more than MAX_NODES
    values or over-long strings (walked iteratively: no recursion)."""
    max_nodes, max_text = LIMITS.get(kind, LIMITS["analyses"])
    stack = [(value, 1)]
    count = 0
    while stack:
        v, depth = stack.pop()
        count += 1
        if count > max_nodes:
            raise Invalid("the cache entry is too large")
        if depth > MAX_DEPTH:
            raise Invalid("the cache entry nests too deeply")
        if isinstance(v, list):
            stack.extend((c, depth + 1) for c in v)
        elif isinstance(v, dict):
            stack.extend((c, depth + 1) for c in v.values())
        elif isinstance(v, str) and len(v) > max_text:
            raise Invalid("a string in the cache entry is too long")
        elif isinstance(v, int) and not isinstance(v, bool) and abs(v) > 10 ** 18:
            raise Invalid("an integer in the cache entry is too large")


def directory(kind: str = "analyses") -> Path | None:
    """Where analyses (or another ``kind`` of record: ``"programs"``) are stored, or None
    when caching is off (:mod:`gbdist.paths`)."""
    from ..paths import cache_dir
    return cache_dir(kind)


def versions() -> list:
    """What every record depends on besides its key: this format, gbdist's and sympy's
    versions (read without importing sympy)."""
    from ..version import __version__
    return [FORMAT, __version__, sympy_version()]


_versions = versions


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


def load(key: str, kind: str = "analyses") -> dict | None:
    """The entry stored under ``key``, shape- and digest-checked, or None (a miss).

    Never raises: any failure is a miss (logged when a file was there but bad).
    """
    d = directory(kind)
    if d is None:
        return None
    path = d / f"{key}.json"
    try:
        data = _read_capped(path)
    except FileNotFoundError:
        return None
    except Exception as e:  # noqa: BLE001 - a cache problem must never become the user's
        _warn(key, e, kind)
        return None
    try:
        record = json.loads(data.decode("utf-8"))
        if not isinstance(record, dict):
            raise Invalid("the cache entry is not a JSON object")
        check_shape(record, kind)
        if record.get("digest") != digest(key, record):
            raise Invalid("the integrity digest does not match (a corrupt, stale or edited entry)")
        return record
    except Exception as e:  # noqa: BLE001
        _warn(key, e, kind)
        return None


def _warn(key: str, e: BaseException, kind: str = "analyses") -> None:
    what = "analysis cache" if kind == "analyses" else f"{kind} cache"
    again = "analysing again" if kind == "analyses" else "computing again"
    log.warning("gbdist %s: discarding entry %s (%s: %s); %s",
                what, key, type(e).__name__, str(e)[:200], again)


def discard(key: str, e: BaseException, kind: str = "analyses") -> None:
    """Log that a loaded entry failed its checks (it is overwritten by the next store)."""
    _warn(key, e, kind)


def store(key: str, record: dict, kind: str = "analyses", since: int | None = None) -> None:
    """Write ``record`` under ``key`` with its digest, atomically (a temporary file renamed
    into place); silently skipped when caching is off or the directory is not writable.
    ``since``: :func:`cut_short` before the record was derived; skipped when a symbolic
    step has run out of its time budget since (the record would depend on the load)."""
    d = directory(kind)
    if d is None or (since is not None and cut_short() != since):
        return
    record = dict(record)
    try:
        check_shape(record, kind)  # what load() would refuse is not written
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


def remembered(memo: dict, name: str, fmt: int, key, decode, compute, encode,
               kind: str = "analyses"):
    """The value for ``key``: from the process-wide ``memo``, else decoded from its on-disk
    record (``name``, ``fmt``, ``key``; a ``kind`` of record), else computed and written to
    both. ``decode`` raises TypeError, KeyError or ValueError on a missing or malformed record
    (a miss)."""
    value = memo.get(key)
    if value is None:
        disk = key_of(name, fmt, key)
        try:
            value = decode(load(disk, kind))
        except (TypeError, KeyError, ValueError):
            mark = cut_short()
            value = compute()
            store(disk, encode(value), kind, since=mark)
        memo[key] = value
    return value
