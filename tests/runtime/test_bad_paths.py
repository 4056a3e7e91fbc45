"""Every bad path given to a loader is an InputError with a clear message (issue 24, item 3):
``gb.load`` (metric files, gbdist.front.syntax.read_source) and ``gbdist.io.read_matrix``
(the data files of the CLI) — a NUL byte, an empty path, not a path, a missing file, a
directory, a device, an unreadable file, a link loop, too long a name, a wrong extension
or format, an empty file. Never a builtins ValueError / TypeError / OSError."""
from __future__ import annotations

import errno
import gzip
import os

import numpy as np
import pytest
import scipy.io
import scipy.sparse as sps

import gbdist as gb
from gbdist.io import read_matrix


def _refused(fn, arg, *words):
    with pytest.raises(gb.InputError) as info:
        fn(arg)
    msg = str(info.value)
    for w in words:
        assert w in msg, (w, msg)
    assert type(info.value).__module__.startswith("gbdist")
    return msg


@pytest.fixture
def files(tmp_path):
    good = tmp_path / "good.gbd"
    good.write_text("op bad_paths_first(x, y) = x\n")
    M = sps.random(5, 4, density=0.5, format="csr", random_state=0)
    scipy.io.mmwrite(str(tmp_path / "good.mtx"), M)
    return tmp_path, good, M


# --- gb.load ---------------------------------------------------------------------


@pytest.mark.parametrize("name", ["a\0b.gbd", "\0", "dir/\0/x.gbd"])
def test_load_a_nul_byte_is_an_input_error(name):
    msg = _refused(gb.load, name, "NUL byte")
    assert "Expected:" in msg and "Got:" in msg and "Hint:" in msg
    _refused(gb.load, __import__("pathlib").Path(name), "NUL byte")


def test_load_every_bad_path(files, monkeypatch, isolated_definitions):
    tmp, good, _ = files
    assert "bad_paths_first" in gb.load(good).ops  # the good file loads
    _refused(gb.load, "", "path is empty")
    _refused(gb.load, tmp / "missing.gbd", "cannot read the metric file", "No such file")
    _refused(gb.load, tmp, "directory")
    _refused(gb.load, good / "below.gbd", "cannot read the metric file")  # a file as a folder
    _refused(gb.load, "x" * 5000 + ".gbd", "cannot read the metric file")  # name too long
    for v in (None, 3, b"good.gbd", ["a.gbd"]):
        _refused(gb.load, v, "path")
    if os.path.exists("/dev/null"):
        _refused(gb.load, "/dev/null", "not a regular file")
    loop = tmp / "loop.gbd"
    os.symlink(loop, loop)
    _refused(gb.load, loop, "cannot read the metric file")
    # unreadable (checked through os.open: the suite may run as root, who reads anything)
    real = os.open

    def denied(path, *a, **k):
        if str(path) == str(good):
            raise PermissionError(errno.EACCES, "Permission denied")
        return real(path, *a, **k)

    monkeypatch.setattr(os, "open", denied)
    _refused(gb.load, good, "cannot read the metric file", "Permission denied")
    monkeypatch.undo()


def test_load_empty_wrong_format_and_data_files(files):
    tmp, _, _ = files
    empty = tmp / "empty.gbd"
    empty.write_bytes(b"")
    _refused(gb.load, empty, "is empty", "an empty file")
    blank = tmp / "blank.gbd"
    blank.write_text("  \n\t\n")
    _refused(gb.load, blank, "is empty", "white space")
    binary = tmp / "binary.gbd"
    binary.write_bytes(b"\x89PNG\r\n\x1a\n\xff\xfe")
    _refused(gb.load, binary, "not UTF-8")
    for data in ("good.mtx", "m.mtx.gz", "m.npz", "M.NPY", "t.csv", "t.TSV", "e.coo",
                 "e.triplets"):  # a data matrix (gbdist.io reads each), not definitions
        _refused(gb.load, tmp / data, "data matrix", "Expected:")
    # text that is not the language: the syntax error names the file, line and column
    other = tmp / "notes.txt"
    other.write_text("hello world\n")
    with pytest.raises(gb.DSLSyntaxError) as info:
        gb.load(other)
    assert str(info.value).startswith(f"{other}:1:")


# --- read_matrix -----------------------------------------------------------------


def test_read_matrix_a_nul_byte_is_an_input_error():
    msg = _refused(read_matrix, "a\0b.mtx", "NUL byte")
    assert "Expected:" in msg and "Hint:" in msg


def test_read_matrix_every_bad_path(files, monkeypatch):
    tmp, good, M = files
    np.testing.assert_array_equal(read_matrix(tmp / "good.mtx").toarray(), M.toarray())
    _refused(read_matrix, "", "path is empty")
    for v in (None, 3, b"good.mtx", ["a.mtx"]):
        _refused(read_matrix, v, "path")
    _refused(read_matrix, tmp / "missing.mtx", "no such file")
    _refused(read_matrix, good / "below.mtx", "no such file")
    _refused(read_matrix, tmp, "directory")
    _refused(read_matrix, "x" * 5000 + ".mtx", "cannot read")
    if os.path.exists("/dev/null"):
        _refused(read_matrix, "/dev/null", "not a regular file")
    loop = tmp / "loop.mtx"
    os.symlink(loop, loop)
    _refused(read_matrix, loop, "cannot read")
    _refused(read_matrix, good, "unknown file type", ".gbd")
    _refused(read_matrix, tmp / "good.mtx.bak", "no such file")
    (tmp / "noext").write_text("1 2 3\n")
    _refused(read_matrix, tmp / "noext", "unknown file type", "no extension")
    import gbdist.io as gio
    real = open

    def denied(path, *a, **k):
        if str(path) == str(tmp / "good.mtx"):
            raise PermissionError(errno.EACCES, "Permission denied")
        return real(path, *a, **k)

    monkeypatch.setattr(gio, "open", denied, raising=False)
    _refused(read_matrix, tmp / "good.mtx", "cannot read", "Permission denied")


@pytest.mark.parametrize("suffix", [".mtx", ".mtx.gz", ".npz", ".npy"])
def test_read_matrix_empty_file(tmp_path, suffix):
    f = tmp_path / f"empty{suffix}"
    f.write_bytes(b"")
    _refused(read_matrix, f, "is empty", "0 bytes")


def test_read_matrix_wrong_format(tmp_path):
    cases = {
        "text.mtx": b"hello\n",
        "bad.npy": b"hello world" * 10,
        "bad.npz": b"PK\x03\x04 not a zip" * 10,
        "bad.mtx.gz": b"\x1f\x8b\x08\x00" + bytes(range(256)) * 4,
    }
    for name, data in cases.items():
        (tmp_path / name).write_bytes(data)
        _refused(read_matrix, tmp_path / name, "cannot read")
    raw = b"%%MatrixMarket matrix coordinate real general\n3 3 2\n1 1 1.0\n2 2 2.0\n" * 1
    gz = gzip.compress(raw)
    (tmp_path / "cut.mtx.gz").write_bytes(gz[:len(gz) // 2])  # truncated
    _refused(read_matrix, tmp_path / "cut.mtx.gz", "cannot read")
    np.save(tmp_path / "obj.npy", np.array([{"a": 1}], dtype=object), allow_pickle=True)
    _refused(read_matrix, tmp_path / "obj.npy", "cannot read")
    np.save(tmp_path / "vec.npy", np.ones(3))
    _refused(read_matrix, tmp_path / "vec.npy", "2-D")
