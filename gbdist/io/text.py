"""Text matrix files: dense CSV / TSV and "row col value" triplets.

``.csv`` (commas) and ``.tsv`` (tabs) hold a dense matrix, one row per line, numbers
only; ``#`` starts a comment. A header row is skipped: with ``header=None`` (the
default) the first line is a header when none of its fields is a number (a first line
mixing names and numbers is an error naming the line: a typo in the first row is never
skipped silently); ``header=True`` / ``False`` says so instead. A column of row names is not read: every other field must be a number.

``.coo``, ``.triplets`` and ``.txt`` hold one stored entry per line, ``row col value``
separated by white space (or ``row col``: a pattern, every value 1), **1-based like
MatrixMarket** unless ``zero_based=True``; ``#`` and ``%`` start comments, and a first
line of words (``row col value``) is a header as above. The shape is the largest row and
column index; duplicates are summed (MatrixMarket's rule). An index 0 in a 1-based file is
refused with a hint, so a 0-based file is never read shifted by one.

Both read with NumPy's C parser (``np.loadtxt``); when it refuses a file, a line-by-line
scan finds the first malformed line and reports its number, what was expected and what
the line holds. NaN and ±inf are read as written (``nan``, ``inf``): the runtime's checks
refuse them where a computation does, as for every other format.
"""
from __future__ import annotations

import csv
import re
import warnings

import numpy as np
import scipy.sparse as sps

from ..errors import InputError
from ..inputs import physical_memory

DENSE_SUFFIXES = {".csv": ",", ".tsv": "\t"}
TRIPLET_SUFFIXES = (".coo", ".triplets", ".txt")
MAX_INDEX = 2**62  # a larger row or column index is a corrupt file, not a matrix
_HEADER_LIMIT = 2**20  # the first line holding data must begin within 1 MiB
_INDEX = re.compile(r"[+-]?[0-9]{1,19}")


def is_number(text: str) -> bool:
    """Whether ``text`` reads as a number (``1``, ``-2.5e3``, ``nan``, ``inf``)."""
    try:
        float(text)
    except ValueError:
        return False
    return "_" not in text  # Python reads "1_000"; NumPy's parser does not


def _content(path, comments: tuple, delimiter: str | None, limit: int = 2):
    """(line number, fields) of the first ``limit`` lines that hold more than comments and
    white space, read within the first MiB (a file of one endless line is refused)."""
    out, seen = [], 0
    with open(path, encoding="utf-8", newline="") as f:
        for lineno, line in enumerate(f, 1):
            seen += len(line)
            fields = _fields(line, comments, delimiter)
            if fields:
                out.append((lineno, fields))
                if len(out) == limit:
                    break
            if seen > _HEADER_LIMIT:
                if not out:
                    raise InputError(f"cannot read {str(path)!r}: no data in its first MiB",
                                     hint="a text matrix has one row (or one entry) per line")
                break
    return out


def _fields(line: str, comments: tuple, delimiter: str | None) -> list:
    for c in comments:
        line = line.split(c, 1)[0]
    if not line.strip():
        return []
    if delimiter is None:
        return line.split()
    return [f.strip() for f in next(csv.reader([line.rstrip("\r\n")], delimiter=delimiter,
                                               quotechar='"'))]


def _malformed(path, lineno: int, expected: str, got: str, hint: str | None = None):
    return InputError(f"cannot read {str(path)!r}: line {lineno} is malformed",
                      expected=expected, got=got, hint=hint)


def _header(first, header) -> bool:
    if header is None:
        return not any(is_number(f) for f in first[1])
    return bool(header)


def _loadtxt(path, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # "input contained no data": handled
        return np.loadtxt(path, encoding="utf-8", ndmin=kw.pop("ndmin", 2), **kw)


# --- dense CSV / TSV ------------------------------------------------------------------


def read_dense(path, header: bool | None = None) -> np.ndarray:
    """The float64 array in a .csv / .tsv file (module docstring)."""
    delimiter = DENSE_SUFFIXES[_suffix(path)]
    lines = _content(path, ("#",), delimiter, limit=1)
    if not lines:
        return np.zeros((0, 0))
    first = lines[0]
    skip = first[0] if _header(first, header) else 0
    ncols = len(first[1])
    try:
        arr = _loadtxt(path, delimiter=delimiter, quotechar='"', comments="#", skiprows=skip,
                       dtype=np.float64)
    except ValueError as e:
        _scan_dense(path, delimiter, skip, ncols, header)
        raise InputError(f"cannot read {str(path)!r}", got=f"ValueError: {e}") from None
    if arr.size == 0:
        return np.zeros((0, ncols))
    if arr.shape[1] != ncols:  # a header of another width than the data
        _scan_dense(path, delimiter, skip, ncols, header)
    return arr


def _scan_dense(path, delimiter, skip, ncols, header) -> None:
    """Raise on the first malformed line after line ``skip`` (the header, or 0)."""
    same = f"{ncols} fields, as " + (f"line {skip} (the header)" if skip else "the first line")
    first = True
    with open(path, encoding="utf-8", newline="") as f:
        for lineno, line in enumerate(f, 1):
            fields = _fields(line, ("#",), delimiter) if lineno > skip else []
            if not fields:
                continue
            if len(fields) != ncols:
                raise _malformed(path, lineno, same, f"{len(fields)} fields: {line.strip()[:80]!r}",
                                 "every line holds one value per column")
            for j, field in enumerate(fields, 1):
                if not is_number(field):
                    hint = ("if the first line is a header, read with --header yes "
                            "(header=True)" if first and not skip else
                            "every field is a number (nan and inf are read as such); a column "
                            "of row names is not read: remove it")
                    raise _malformed(path, lineno, "numbers", f"{field[:40]!r} in column {j}",
                                     hint)
            first = False


# --- triplets ---------------------------------------------------------------------------


def read_triplets(path, header: bool | None = None, zero_based: bool = False) -> sps.coo_matrix:
    """The COO matrix of a "row col value" (or "row col") file (module docstring)."""
    lines = _content(path, ("#", "%"), None, limit=2)
    if not lines:
        return sps.coo_matrix((0, 0))
    skip = lines[0][0] if _header(lines[0], header) else 0
    data = [entry for entry in lines if entry[0] > skip]
    if not data:
        return sps.coo_matrix((0, 0))
    nfields = len(data[0][1])
    if nfields not in (2, 3):
        raise _malformed(path, data[0][0], "row col value (or row col)",
                         f"{nfields} fields: {' '.join(data[0][1])[:80]!r}",
                         "a dense table of numbers is a .csv or .tsv file")
    dtype = [("r", np.int64), ("c", np.int64)] + ([("v", np.float64)] if nfields == 3 else [])
    base = 0 if zero_based else 1
    try:
        arr = _loadtxt(path, dtype=dtype, comments=("#", "%"), skiprows=skip, ndmin=1)
    except ValueError as e:
        _scan_triplets(path, skip, nfields, base, header)
        raise InputError(f"cannot read {str(path)!r}", got=f"ValueError: {e}") from None
    rows, cols = arr["r"], arr["c"]
    if rows.size and (min(rows.min(), cols.min()) < base
                      or max(rows.max(), cols.max()) >= MAX_INDEX):
        _scan_triplets(path, skip, nfields, base, header)
    rows, cols = rows - base, cols - base
    shape = (int(rows.max()) + 1, int(cols.max()) + 1) if rows.size else (0, 0)
    need = 8 * (shape[0] + 1) + 24 * rows.size
    free = physical_memory()
    if free is not None and need > free:
        raise InputError(f"cannot read {str(path)!r}: it would need more memory than is free",
                         got=f"{shape[0]} x {shape[1]} (its largest indices) with {rows.size} "
                             f"entries: about {need / 2**30:.3g} GiB, free {free / 2**30:.3g} GiB",
                         hint="check the indices: the largest row index sets the number of rows")
    values = arr["v"] if nfields == 3 else np.ones(rows.size)
    return sps.coo_matrix((values, (rows, cols)), shape=shape)


def _scan_triplets(path, skip, nfields, base, header) -> None:
    """Raise on the first malformed line after line ``skip``."""
    want = "row col value" if nfields == 3 else "row col"
    first = True
    with open(path, encoding="utf-8", newline="") as f:
        for lineno, line in enumerate(f, 1):
            fields = _fields(line, ("#", "%"), None) if lineno > skip else []
            if not fields:
                continue
            if len(fields) != nfields:
                raise _malformed(path, lineno, f"{nfields} fields ({want}), as the first entry",
                                 f"{len(fields)} fields: {line.strip()[:80]!r}")
            for j, field in enumerate(fields[:2]):
                what = ("row", "column")[j]
                if not _INDEX.fullmatch(field):
                    hint = ("if the first line is a header, read with --header yes "
                            "(header=True)" if first and not skip else None)
                    raise _malformed(path, lineno, f"a whole number for the {what} index",
                                     f"{field[:40]!r}", hint)
                index = int(field)
                if index < base:
                    raise _malformed(
                        path, lineno, f"{what} indices from {base}",
                        f"{what} index {index}",
                        "indices are 1-based (as MatrixMarket): for a file counted from 0, "
                        "add --zero-based (zero_based=True)" if base else None)
                if index >= MAX_INDEX:
                    raise _malformed(path, lineno, f"a {what} index below 2^62", f"{index}")
            if nfields == 3 and not is_number(fields[2]):
                raise _malformed(path, lineno, "a number for the value", f"{fields[2][:40]!r}")
            first = False


def _suffix(path) -> str:
    name = str(path).lower()
    return next(s for s in DENSE_SUFFIXES if name.endswith(s))
