"""Reading matrices from files and writing neighbour results.

Inputs: MatrixMarket (``.mtx``, ``.mtx.gz``), SciPy sparse ``.npz``
(``scipy.sparse.save_npz``), a NumPy ``.npz`` holding one dense 2-D array, a
``.npy`` dense array, and text (:mod:`.text`): dense ``.csv`` / ``.tsv``, and
``row col value`` triplets (``.coo``, ``.triplets``, ``.txt``; 1-based unless
``zero_based``). Everything comes back as a CSR matrix with its stored dtype
(float64 for text); pickled objects are never loaded.
"""
from __future__ import annotations

import os
import stat
import zipfile
import zlib
from pathlib import Path

import numpy as np
import scipy.io
import scipy.sparse as sps

from ..errors import InputError
from ..paths import file_name
from ..inputs import host_csr, physical_memory
from .text import DENSE_SUFFIXES, TRIPLET_SUFFIXES, read_dense, read_triplets

FORMATS = (".mtx, .mtx.gz, .npz (scipy.sparse.save_npz or one dense array), .npy, .csv, .tsv, "
           "or row-col-value triplets (.coo, .triplets, .txt)")
SUFFIXES = (".mtx", ".mtx.gz", ".mm", ".mm.gz", ".npz", ".npy") + tuple(DENSE_SUFFIXES) \
    + TRIPLET_SUFFIXES


def read_matrix(path, *, header: bool | None = None, zero_based: bool = False) -> sps.csr_matrix:
    """The matrix stored at ``path`` as CSR; a clear InputError when it cannot be read:
    not a path, an empty path or one with a NUL byte, a missing file, a directory, a FIFO
    or a device, an unreadable or empty file, an unknown extension, a malformed file (a
    text file's names the line).

    ``header`` (text files): None detects a header line (a field that is not a number),
    True / False says whether the first line is one. ``zero_based`` (triplet files):
    indices count from 0 rather than 1 (MatrixMarket's convention, the default)."""
    name, st = _regular_file(path, "a matrix file", FORMATS, SUFFIXES)
    p = Path(name)
    lower = p.name.lower()
    try:
        if lower.endswith(".npz"):
            check_npz_headers(p)
            m = _read_npz(p)
        elif lower.endswith(".npy"):
            with open(p, "rb") as f:
                _check_npy_header(f, st.st_size, name)
            m = np.load(p, allow_pickle=False)
        elif lower.endswith(tuple(DENSE_SUFFIXES)):
            m = read_dense(p, header)
        elif lower.endswith(TRIPLET_SUFFIXES):
            m = read_triplets(p, header, zero_based)
        else:  # MatrixMarket, plain or gzipped
            check_mtx_header(p)
            m = scipy.io.mmread(name)
    except InputError:
        raise
    except (OSError, ValueError, EOFError, KeyError, IndexError, zipfile.BadZipFile,
            zlib.error, UnicodeDecodeError) as e:
        raise InputError(f"cannot read {name!r}", got=f"{type(e).__name__}: {e}",
                         hint=f"formats: {FORMATS}") from None
    return _as_csr(m, name)


def _regular_file(path, what: str, formats: str, suffixes: tuple):
    """(name, os.stat result) of ``path``: an existing, non-empty regular file named with one
    of ``suffixes``; else an InputError saying which of these it is not."""
    name = file_name(path, what, hint=f"formats: {formats}")
    try:
        st = os.stat(name)
    except (FileNotFoundError, NotADirectoryError):
        raise InputError(f"cannot read {name!r}: no such file", hint=f"formats: {formats}") from None
    except (OSError, ValueError) as e:  # too long a name, a loop of links, no permission...
        got = (e.strerror or str(e)) if isinstance(e, OSError) else str(e)
        raise InputError(f"cannot read {name!r}", got=got, hint=f"formats: {formats}") from None
    if stat.S_ISDIR(st.st_mode):
        raise InputError(f"cannot read {name!r}: it is a directory",
                         expected=f"{what} ({formats})")
    if not stat.S_ISREG(st.st_mode):  # a FIFO or a device would block or never end
        raise InputError(f"cannot read {name!r}: not a regular file",
                         expected=f"{what} ({formats})")
    if not Path(name).name.lower().endswith(suffixes):
        raise InputError(f"cannot read {name!r}: unknown file type",
                         expected=formats, got=Path(name).suffix or "no extension")
    if st.st_size == 0:
        raise InputError(f"cannot read {name!r}: the file is empty", expected=formats,
                         got="0 bytes", hint="the file was not written completely, or is the "
                                             "wrong one")
    return name, st


def read_vector(path) -> np.ndarray:
    """The 1-D array in a ``.npy`` file, checked as :func:`read_matrix` checks its files
    (the header against the file's size before NumPy allocates; no pickles)."""
    name, st = _regular_file(path, "a vector file", ".npy (one 1-D array)", (".npy",))
    try:
        with open(name, "rb") as f:
            _check_npy_header(f, st.st_size, name)
        arr = np.load(name, allow_pickle=False)
    except InputError:
        raise
    except (OSError, ValueError, EOFError) as e:
        raise InputError(f"cannot read {name!r}", got=f"{type(e).__name__}: {e}",
                         expected=".npy (one 1-D array)") from None
    if arr.ndim != 1:
        raise InputError(f"{name!r} does not hold a vector", expected="a 1-D array",
                         got=f"shape {arr.shape}")
    if arr.dtype.kind not in "biuf":
        raise InputError(f"{name!r} does not hold real numbers", got=f"dtype {arr.dtype}")
    return arr


MAX_DEFLATE_RATIO = 1032  # the most DEFLATE (gzip) can compress: a bound on a .gz's content
_MM_FIELDS = ("real", "double", "integer", "pattern", "complex")
_MM_SYMMETRY = ("general", "symmetric", "skew-symmetric", "hermitian")


def check_mtx_header(path) -> tuple[int, int, int]:
    """Check a MatrixMarket header against the file before anything is allocated.

    Returns (rows, cols, entries). Refuses, with an InputError: a malformed
    header; entries beyond rows x cols; more entries (or, for the array format,
    values) than the file's size can hold (for ``.gz``, than its size times
    DEFLATE's largest ratio); and a matrix whose reading would need more memory
    than is free (so a header promising 10^11 rows is refused at once).
    """
    import gzip
    p = Path(path)
    gz = p.name.lower().endswith(".gz")
    size = p.stat().st_size
    with (gzip.open(p, "rb") if gz else open(p, "rb")) as f:
        banner = f.readline(1024)
        header_bytes = len(banner)
        words = banner.decode("ascii", "replace").lower().split()
        if len(words) != 5 or words[0] != "%%matrixmarket" or words[1] != "matrix" \
                or words[2] not in ("coordinate", "array") or words[3] not in _MM_FIELDS \
                or words[4] not in _MM_SYMMETRY:
            raise InputError(f"cannot read {str(path)!r}: not a MatrixMarket matrix header",
                             expected="%%MatrixMarket matrix coordinate|array real|integer|"
                                      "pattern general|symmetric|skew-symmetric",
                             got=banner[:80].decode("ascii", "replace").strip() or "an empty file")
        fmt, field = words[2], words[3]
        while True:  # comments, then the size line
            line = f.readline(1024)
            header_bytes += len(line)
            if not line:
                raise InputError(f"cannot read {str(path)!r}: the MatrixMarket size line is missing")
            text = line.decode("ascii", "replace").strip()
            if text and not text.startswith("%"):
                break
            if header_bytes > 2**20:
                raise InputError(f"cannot read {str(path)!r}: the MatrixMarket header is over 1 MiB")
    parts = text.split()
    want = 3 if fmt == "coordinate" else 2
    if len(parts) != want or not all(t.isascii() and t.isdigit() and len(t) <= 19 for t in parts):
        raise InputError(f"cannot read {str(path)!r}: malformed MatrixMarket size line",
                         expected="rows cols entries" if fmt == "coordinate" else "rows cols",
                         got=text[:80])
    rows, cols = int(parts[0]), int(parts[1])
    entries = int(parts[2]) if fmt == "coordinate" else rows * cols
    if fmt == "coordinate" and entries > rows * cols:
        raise InputError(f"cannot read {str(path)!r}: the header promises more entries than cells",
                         got=f"{entries} entries in a {rows} x {cols} matrix")
    # Each coordinate entry takes at least "i j v\n" (6 bytes; 4 for pattern), each array
    # value "v\n" (2 bytes).
    min_bytes = 2 if fmt == "array" else (4 if field == "pattern" else 6)
    room = size * MAX_DEFLATE_RATIO if gz else size - header_bytes
    if entries * min_bytes > room:
        raise InputError(f"cannot read {str(path)!r}: the header promises more data than the file holds",
                         got=f"{entries} {'values' if fmt == 'array' else 'entries'} "
                             f"({rows} x {cols}) in a file of {size} bytes",
                         hint="the file is truncated or its header is wrong")
    need = 8 * (rows + 1) + (8 * entries if fmt == "array" else 24 * entries)
    free = physical_memory()
    if free is not None and need > free:
        raise InputError(f"cannot read {str(path)!r}: it would need more memory than is free",
                         got=f"{rows} x {cols} with {entries} entries: about {need / 2**30:.3g} GiB, "
                             f"free {free / 2**30:.3g} GiB")
    return rows, cols, entries


def _check_npy_header(f, available: int, name: str) -> None:
    """Refuse a .npy header whose shape needs more bytes than ``available``
    (what the file, or a .npz member, can hold) before NumPy allocates it."""
    major, _ = np.lib.format.read_magic(f)
    read = np.lib.format.read_array_header_1_0 if major == 1 else np.lib.format.read_array_header_2_0
    shape, _, dtype = read(f)
    count = 1
    for n in shape:
        count *= int(n)
    need = count * dtype.itemsize
    if need > available:
        raise InputError(f"cannot read {name!r}: the array header promises more data than the file holds",
                         got=f"shape {tuple(shape)} of {dtype} ({need} bytes) in {available} bytes",
                         hint="the file is truncated or its header is wrong")


def check_npz_headers(path) -> None:
    """Check every member of a .npz against its stored size before NumPy reads it:
    a member's stated size must be reachable from its compressed size, and its
    array header must fit in the member."""
    p = Path(path)
    with zipfile.ZipFile(p) as z:
        for info in z.infolist():
            limit = info.compress_size * (MAX_DEFLATE_RATIO if info.compress_type else 1)
            if info.file_size > limit + 1024:
                raise InputError(f"cannot read {str(path)!r}: member {info.filename!r} claims more "
                                 "data than it holds",
                                 got=f"{info.file_size} bytes from {info.compress_size} compressed")
            if info.filename.endswith(".npy"):
                with z.open(info) as f:
                    _check_npy_header(f, info.file_size, f"{path}:{info.filename}")


def _read_npz(p: Path):
    with np.load(p, allow_pickle=False) as z:
        names = list(z.files)
        if "format" in names and "shape" in names:
            return sps.load_npz(p)
        if len(names) != 1:
            raise InputError(f"cannot read {str(p)!r}: not a sparse matrix .npz and not one array",
                             expected="scipy.sparse.save_npz output, or np.savez with one array",
                             got=f"arrays {', '.join(names) or 'none'}")
        return z[names[0]]


def _as_csr(m, path) -> sps.csr_matrix:
    """CSR with the stored dtype, validated (gbdist.inputs) before SciPy converts it:
    a file whose indices exceed its shape is refused, never read out of bounds."""
    if sps.issparse(m):
        if m.ndim != 2:
            raise InputError(f"{str(path)!r} does not hold a 2-D matrix", got=f"{m.ndim}-D")
        return host_csr(m, repr(str(path)), dtype=None)
    arr = np.asarray(m)
    if arr.ndim != 2:
        raise InputError(f"{str(path)!r} does not hold a 2-D matrix", got=f"shape {arr.shape}")
    if arr.dtype.kind not in "biuf":
        raise InputError(f"{str(path)!r} does not hold real numbers", got=f"dtype {arr.dtype}")
    return sps.csr_matrix(arr)


def write_knn(path, indices: np.ndarray, distances: np.ndarray) -> Path:
    """Save ``indices`` (int64) and ``distances`` with ``np.savez``; returns the path written."""
    p = Path(path)
    if p.suffix.lower() != ".npz":
        p = p.with_name(p.name + ".npz")  # what np.savez would do, made explicit
    try:
        np.savez(p, indices=np.asarray(indices, dtype=np.int64), distances=np.asarray(distances))
    except OSError as e:
        raise InputError(f"cannot write {str(p)!r}", got=e.strerror or str(e)) from None
    return p
