"""Reading matrices from files and writing neighbour results.

Inputs: MatrixMarket (``.mtx``, ``.mtx.gz``), SciPy sparse ``.npz``
(``scipy.sparse.save_npz``), a NumPy ``.npz`` holding one dense 2-D array, or
a ``.npy`` dense array. Everything comes back as a CSR matrix with its stored
dtype; pickled objects are never loaded.
"""
from __future__ import annotations

import zipfile
from pathlib import Path

import numpy as np
import numpy.lib.format as npformat
import scipy.io
import scipy.sparse as sps

from .errors import InputError, ResultTooLargeError
from .inputs import host_csr
from .runtime import physical_memory

FORMATS = ".mtx, .mtx.gz, .npz (scipy.sparse.save_npz or one dense array) or .npy"


def read_matrix(path) -> sps.csr_matrix:
    """The matrix stored at ``path`` as CSR; a clear InputError when it cannot be read."""
    p = Path(path)
    if not p.exists():
        raise InputError(f"cannot read {str(path)!r}: no such file", hint=f"formats: {FORMATS}")
    if p.is_dir():
        raise InputError(f"cannot read {str(path)!r}: it is a directory")
    name = p.name.lower()
    try:
        if name.endswith((".mtx", ".mtx.gz", ".mm", ".mm.gz")):
            _check_mtx_header(p)
            m = scipy.io.mmread(str(p))
        elif name.endswith(".npz"):
            _check_npz_headers(p)
            m = _read_npz(p)
        elif name.endswith(".npy"):
            with open(p, "rb") as fp:
                _check_npy_header(fp, p.stat().st_size, str(path))
            m = np.load(p, allow_pickle=False)
        else:
            raise InputError(f"cannot read {str(path)!r}: unknown file type",
                             expected=FORMATS, got=p.suffix or "no extension")
    except InputError:
        raise
    except (OSError, ValueError, EOFError, KeyError, zipfile.BadZipFile, UnicodeDecodeError) as e:
        raise InputError(f"cannot read {str(path)!r}", got=f"{type(e).__name__}: {e}",
                         hint=f"formats: {FORMATS}") from None
    return _as_csr(m, path)


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


def _promise(path, what: str, nbytes: int, available: int) -> None:
    """Refuse a header that promises more data than the file (or memory) can hold."""
    if nbytes > available:
        raise InputError(f"cannot read {str(path)!r}: its header promises more data than there is",
                         expected=f"at most {available} bytes of {what}",
                         got=f"a header promising {nbytes} bytes",
                         hint="the file is truncated or its header is corrupt; write it again")
    mem = physical_memory()
    if mem is not None and nbytes > mem:
        raise ResultTooLargeError(f"cannot read {str(path)!r}: it holds {nbytes / 2**30:.1f} GiB, "
                                  f"more than the memory available ({mem / 2**30:.1f} GiB)")


def _check_npy_header(fp, size: int, path) -> None:
    """The shape in a .npy header, checked against the bytes that follow it."""
    version = npformat.read_magic(fp)
    read = npformat.read_array_header_1_0 if version == (1, 0) else npformat.read_array_header_2_0
    shape, _, dtype = read(fp)
    if dtype.hasobject:
        return  # np.load(allow_pickle=False) refuses it with a clear ValueError
    count = 1
    for d in shape:
        count *= int(d)
    _promise(path, "array data", count * dtype.itemsize, size - fp.tell())


def _check_npz_headers(p: Path) -> None:
    with zipfile.ZipFile(p) as z:
        for info in z.infolist():
            if info.filename.endswith(".npy"):
                with z.open(info) as fp:
                    _check_npy_header(fp, info.file_size, f"{p}:{info.filename}")


def _check_mtx_header(p: Path) -> None:
    """MatrixMarket: the entry count of the header against the file size (each entry
    takes at least two bytes of text); for compressed files, against memory."""
    rows, cols, entries, fmt, _, symmetry = scipy.io.mminfo(str(p))
    if rows < 0 or cols < 0 or entries < 0:
        raise InputError(f"cannot read {str(p)!r}: its header has a negative size",
                         got=f"{rows} x {cols}, {entries} entries")
    stored = entries if fmt == "coordinate" else rows * cols // (1 if symmetry == "general" else 2)
    per_entry = 24 if fmt == "coordinate" else 8  # bytes of memory per entry read
    if p.name.lower().endswith(".gz"):
        _promise(p, "entries", stored * per_entry, stored * per_entry)
    else:
        _promise(p, "entries", 2 * stored, p.stat().st_size)


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
