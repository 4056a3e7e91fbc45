"""Reading the matrix files of ``knn``, ``pairwise`` and ``run``, and checking outputs.

``--transpose`` swaps rows and columns after reading (a 10x-style genes × cells
``.mtx`` holds the cells as columns); ``--header`` and ``--zero-based`` go to the
text readers (:mod:`gbdist.io.text`). A tall MatrixMarket file read without
``--transpose`` gets a hint on stderr, never a refusal.
"""
from __future__ import annotations

from pathlib import Path

from ..errors import InputError
from .base import say

TALL = 20  # rows > TALL x columns in a .mtx: probably genes x cells (the 10x convention)
_MTX = (".mtx", ".mtx.gz", ".mm", ".mm.gz")


def add_input_options(p, what: str = "INPUT (and INDEX)") -> None:
    """``--transpose``, ``--header`` and ``--zero-based`` on one parser."""
    p.add_argument("--transpose", "-T", action="store_true",
                   help=f"swap the rows and columns of {what} after reading: for a genes x cells "
                        "file (10x-style .mtx, rows are genes) whose points are the cells")
    p.add_argument("--header", default="auto", choices=("auto", "yes", "no"),
                   help=".csv/.tsv/triplet files: whether the first line is a header (auto: when "
                        "none of its fields is a number; default auto)")
    p.add_argument("--zero-based", action="store_true",
                   help="triplet files (.coo, .triplets, .txt: 'row col value' lines): indices "
                        "count from 0 (default: from 1, as MatrixMarket)")


def read_file(args, path, what: str):
    """The matrix in ``path`` as read (CSR, its stored dtype), transposed with --transpose,
    with the tall-file hint on stderr."""
    from ..io import read_matrix
    header = {"auto": None, "yes": True, "no": False}[getattr(args, "header", "auto")]
    M = read_matrix(path, header=header, zero_based=getattr(args, "zero_based", False))
    if getattr(args, "transpose", False):
        return M.T.tocsr()
    rows, cols = M.shape
    if rows > TALL * cols and str(path).lower().endswith(_MTX):
        say(args, f"gbdist: hint: {what} {str(path)!r} has {rows:,} rows and {cols:,} columns; "
                  "a 10x-style .mtx is genes x cells (rows are genes): if its points are the "
                  "columns, add --transpose")
    return M


def read_points(args, path, what: str):
    """``read_file``, then made canonical (validated, float dtype kept) by the runtime."""
    from .. import runtime
    M = read_file(args, path, what)
    if M.shape[0] == 0 or M.shape[1] == 0:
        raise InputError(f"{what} {str(path)!r} holds no data", got=f"shape {M.shape}",
                         expected="at least one row and one column")
    from ..inputs import check_finite
    dtype = M.dtype
    label = f"{what} {str(path)!r}"
    M = runtime.to_csr(M, label, ensure_all_finite=False)  # bounds, dtype and structure checks
    try:
        check_finite(M, label, True)
    except InputError as e:  # the library's hint names Python keywords the CLI does not have
        raise InputError(e.message, expected=e.expected, got=e.got,
                         hint="remove or impute these values in the file: the command line "
                              "computes on finite values only") from None
    return M if M.dtype == dtype or dtype.kind != "f" else M.astype(dtype)


def shape_text(M, args) -> str:
    """"322 x 23,433" and, after --transpose, that it was transposed."""
    text = f"{M.shape[0]:,} x {M.shape[1]:,}"
    return text + (" (transposed)" if getattr(args, "transpose", False) else "")


def output_path(path, suffix: str) -> Path:
    """The path that will be written (numpy appends ``suffix``), checked before any work."""
    p = Path(path)
    if p.suffix.lower() != suffix:
        p = p.with_name(p.name + suffix)
    if str(path).endswith(("/", "\\")) or Path(path).is_dir() or p.is_dir():
        raise InputError(f"the output {str(path)!r} is a directory",
                         expected=f"a file name, e.g. {Path(path) / ('out' + suffix)}")
    parent = p.parent if str(p.parent) else Path(".")
    if not parent.is_dir():
        raise InputError(f"cannot write {str(p)!r}: the directory {str(parent)!r} does not exist")
    return p
