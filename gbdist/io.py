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
import scipy.io
import scipy.sparse as sps

from .errors import InputError

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
            m = scipy.io.mmread(str(p))
        elif name.endswith(".npz"):
            m = _read_npz(p)
        elif name.endswith(".npy"):
            m = np.load(p, allow_pickle=False)
        else:
            raise InputError(f"cannot read {str(path)!r}: unknown file type",
                             expected=FORMATS, got=p.suffix or "no extension")
    except InputError:
        raise
    except (OSError, ValueError, EOFError, KeyError, zipfile.BadZipFile) as e:
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
    if sps.issparse(m):
        if m.ndim != 2:
            raise InputError(f"{str(path)!r} does not hold a 2-D matrix", got=f"{m.ndim}-D")
        return sps.csr_matrix(m)
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
