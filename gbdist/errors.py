"""The exceptions gbdist raises for anything a user can cause.

One root, :class:`GbdistError`; every message speaks about the user's input and
reads "what went wrong / Expected / Got / Hint". Errors that come from a metric
text carry a :class:`Span` and print the offending line with a caret.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass

_LOCK = threading.Lock()


@dataclass(frozen=True)
class Span:
    """A position in a source text: where a definition or node came from."""

    source: str  # file name, or "<text>"
    text: str  # the whole source text
    line: int  # 1-based
    column: int  # 1-based
    end_column: int | None = None

    def excerpt(self) -> str:
        lines = self.text.splitlines() or [""]
        line = lines[self.line - 1] if 0 < self.line <= len(lines) else ""
        width = max(1, (self.end_column or self.column + 1) - self.column)
        start = self.column - 1
        if len(line) > EXCERPT_WIDTH:  # a window around the column, not a 100 KB line
            lo = max(0, start - EXCERPT_WIDTH // 3)
            hi = lo + EXCERPT_WIDTH
            line = ("…" if lo else "") + line[lo:hi] + ("…" if hi < len(line) else "")
            start = start - lo + (1 if lo else 0)
            width = min(width, EXCERPT_WIDTH - (start - (1 if lo else 0)) + 1)
        return f"    {line}\n    {' ' * start}{'^' * max(1, width)}"

    def __str__(self) -> str:
        return f"{self.source}:{self.line}:{self.column}"


EXCERPT_WIDTH = 160
"""The most characters of the offending line an error quotes (a window around the column)."""


class GbdistError(Exception):
    """Root of every error gbdist raises about its input."""

    def __init__(self, message: str, *, expected: str | None = None, got: str | None = None,
                 hint: str | None = None, span: Span | None = None):
        self.message = message
        self.expected = expected
        self.got = got
        self.hint = hint
        self.span = span
        super().__init__(self._render())

    def _render(self) -> str:
        parts = []
        if self.span is not None:
            parts.append(f"{self.span}: {self.message}")
            parts.append(self.span.excerpt())
        else:
            parts.append(self.message)
        if self.expected is not None:
            parts.append(f"Expected: {self.expected}")
        if self.got is not None:
            parts.append(f"Got: {self.got}")
        if self.hint is not None:
            parts.append(f"Hint: {self.hint}")
        return "\n".join(parts)

    def with_span(self, span: Span | None) -> "GbdistError":
        """The same error, located at ``span`` (if it has no location yet)."""
        if span is None or self.span is not None:
            return self
        return type(self)(self.message, expected=self.expected, got=self.got,
                          hint=self.hint, span=span)


class DefinitionError(GbdistError):
    """An op, monoid, semiring or metric definition is malformed."""


class DSLSyntaxError(GbdistError):
    """A metric text does not follow the grammar."""


class UnknownNameError(GbdistError, KeyError, ValueError):
    """A name (metric, op, semiring, matrix) is not defined.

    Both a ``KeyError`` (a failed lookup in a registry) and a ``ValueError``
    (what SciPy and scikit-learn raise for an unknown metric name).
    """

    def __str__(self):  # KeyError would quote the message
        return self._render()


class UnknownAttributeError(UnknownNameError, AttributeError):
    """An unknown name read as an attribute (``gb.semirings.min_pluss``): also an
    ``AttributeError``, so ``getattr(ns, name, default)`` and ``hasattr`` still work."""


class RedefinitionError(GbdistError):
    """A name is defined twice."""


class ArityError(GbdistError):
    """A function or op is called with the wrong number of arguments."""


class TypeCheckError(GbdistError):
    """An expression mixes kinds (scalar, vector, matrix) in a way that has no meaning."""


class AnalysisError(GbdistError):
    """A product cannot be evaluated sparsely (no strategy applies)."""


class InputError(GbdistError, ValueError):
    """A concrete input (matrix, vector, parameter) is unusable: wrong shape, dtype, ..."""


class DomainError(InputError):
    """An input lies outside an op's domain (e.g. negative values for hellinger)."""


class BackendError(GbdistError):
    """A backend is not available or cannot run the plan.

    Its first line says which backend cannot do what; one without a hint of its own
    gets the way out that always exists (the CPU backend runs every plan)."""

    DEFAULT_HINT = ("the NumPy reference backend runs every plan gbdist accepts: backend='cpu' "
                    "with GBDIST_CPU_BACKEND=numpy (docs/cpu.md)")

    def __init__(self, message: str, *, expected: str | None = None, got: str | None = None,
                 hint: str | None = None, span: Span | None = None):
        super().__init__(message, expected=expected, got=got,
                         hint=self.DEFAULT_HINT if hint is None else hint, span=span)


class CorruptInputError(InputError):
    """A sparse operand's arrays are inconsistent (an index pointer that decreases, a
    column index outside the shape, lengths that disagree): reading it would touch
    memory outside the arrays, so it is refused before any kernel sees it."""


class NonFiniteError(InputError):
    """An input holds NaN or ±inf and ``ensure_all_finite`` does not allow it
    (scikit-learn's "Input X contains NaN" ValueError)."""


class ResultTooLargeError(InputError, MemoryError):
    """The result (or a temporary the run cannot split) does not fit in memory.

    Both an :class:`InputError` (a ``ValueError``) and a ``MemoryError``, so code that
    catches either sees it; the hint names the chunked entry points.
    """


class ParameterError(InputError, TypeError):
    """A parameter has the wrong type or value (``n_neighbors=2.5``, ``algorithm="fast"``).

    Both a ``ValueError`` and a ``TypeError``, like scikit-learn's
    ``InvalidParameterError``: code written for scikit-learn catches either.
    """


def _sklearn_not_fitted():
    try:
        from sklearn.exceptions import NotFittedError as base
    except ImportError:  # pragma: no cover - scikit-learn is a dependency
        class base(ValueError, AttributeError):  # noqa: N801
            pass
    return base


def _make_not_fitted_error() -> type:
    class NotFittedError(GbdistError, _sklearn_not_fitted()):
        """An estimator is queried before ``fit``.

        Also scikit-learn's ``sklearn.exceptions.NotFittedError`` (itself a
        ``ValueError`` and an ``AttributeError``), which ``check_is_fitted`` and
        scikit-learn users catch.

        The class is made on first access (``gbdist.errors.NotFittedError``, or a
        ``from ... import`` of it): its base imports scikit-learn (about a second),
        which ``import gbdist`` must not pay. It is one class for the process.
        """

    NotFittedError.__module__ = __name__
    NotFittedError.__qualname__ = "NotFittedError"
    return NotFittedError


def __getattr__(name: str):
    """PEP 562: ``NotFittedError`` is created (importing scikit-learn) when first read."""
    if name == "NotFittedError":
        with _LOCK:  # one class, even when two threads read it first at once
            cls = globals().get("_NOT_FITTED")
            if cls is None:
                cls = globals()["_NOT_FITTED"] = _make_not_fitted_error()
            globals()["NotFittedError"] = cls  # later reads skip this function
        return cls
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class MetricTypeError(TypeCheckError, TypeError):
    """A metric callable did not build a gbdist expression (for instance a scikit-learn /
    SciPy style ``f(x, y) -> float``, which gbdist does not call on rows).

    Also a ``TypeError``, as Python raises for a callable of the wrong kind.
    """
