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

from ..algebra import terms
from ..algebra.records import (  # noqa: F401 (the store every cache shares)
    FORMAT, LIMITS, MAX_BYTES, MAX_DEPTH, MAX_NODES, MAX_TEXT, Invalid, Unsupported, _read_capped,
    _versions, check_shape, code_digest, cut_short, digest, directory, discard, key_of, load,
    log, note_cut_short, remembered, store, versions)

MAX_ARGS = terms.MAX_ARGS  # arguments of one sympy node
MAX_DIGITS = terms.MAX_DIGITS  # digits of one integer (numerator, denominator)
MAX_EXPONENT = terms.MAX_EXPONENT  # |n| in a power of a number to a number n


def encode(e) -> tuple:
    """A sympy tree as a term (nested tuples, written as JSON lists):
    :func:`gbdist.algebra.terms.encode`."""
    return terms.encode(e)


def decode(t):
    """The inverse of :func:`encode` for data read from a file: the term is checked node by
    node (:func:`gbdist.algebra.terms.from_json`), then rebuilt as written. Recursive, so
    callers bound the depth first (:func:`check_shape` does)."""
    return terms.decode(terms.from_json(t))
