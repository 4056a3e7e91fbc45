"""Text matrix files (gbdist.io.text): dense .csv/.tsv and 'row col value' triplets, read
against NumPy and SciPy reading the same data; malformed files named by line."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sps
from numpy.testing import assert_array_equal

import gbdist as gb
from gbdist.io import read_matrix


def _refused(path, *words, **kw):
    with pytest.raises(gb.InputError) as e:
        read_matrix(path, **kw)
    text = str(e.value)
    for w in words:
        assert w in text, text
    return text


@pytest.fixture
def table():
    rng = np.random.default_rng(4)
    A = rng.standard_normal((7, 5))
    A[A < 0.2] = 0.0
    A[2, 3] = 1e-300
    A[4, 0] = -3.5e12
    return A


@pytest.mark.parametrize("suffix, sep", [(".csv", ","), (".tsv", "\t")])
def test_dense_text_equals_numpy(tmp_path, table, suffix, sep):
    f = tmp_path / f"t{suffix}"
    np.savetxt(f, table, delimiter=sep, fmt="%.17g")
    M = read_matrix(f)
    assert sps.isspmatrix_csr(M) and M.dtype == np.float64
    assert_array_equal(M.toarray(), np.loadtxt(f, delimiter=sep, ndmin=2))
    assert_array_equal(M.toarray(), table)  # %.17g round-trips exactly
    # a header of names (detected), comments and blank lines, quoted numbers
    h = tmp_path / f"h{suffix}"
    lines = [sep.join(f'"c{j}"' for j in range(5)), "# a comment", ""]
    lines += [sep.join(repr(float(v)) for v in row) for row in table]
    h.write_text("\n".join(lines) + "\n")
    assert_array_equal(read_matrix(h).toarray(), table)
    assert_array_equal(read_matrix(h, header=True).toarray(), table)
    _refused(h, "line 1 is malformed", "'c0' in column 1", header=False)


def test_csv_header_rules(tmp_path):
    f = tmp_path / "years.csv"
    f.write_text("2019,2020\n1,2\n3,4\n")
    assert_array_equal(read_matrix(f).toarray(), [[2019, 2020], [1, 2], [3, 4]])  # numbers: data
    assert_array_equal(read_matrix(f, header=True).toarray(), [[1, 2], [3, 4]])
    mixed = tmp_path / "mixed.csv"
    mixed.write_text("x,1\n1,2\n")  # neither all names nor all numbers: never skipped silently
    _refused(mixed, "line 1 is malformed", "'x' in column 1", "--header yes")
    assert_array_equal(read_matrix(mixed, header=True).toarray(), [[1, 2]])
    one = tmp_path / "col.csv"
    one.write_text("1\n2\n3\n")
    assert read_matrix(one).shape == (3, 1)
    only = tmp_path / "only.csv"
    only.write_text("a,b,c\n")
    assert read_matrix(only).shape == (0, 3)


def test_csv_nan_and_inf_are_read_as_written(tmp_path):
    f = tmp_path / "n.csv"
    f.write_text("1,nan\ninf,-inf\n")
    M = read_matrix(f).toarray()
    assert np.isnan(M[0, 1]) and M[1, 0] == np.inf and M[1, 1] == -np.inf


@pytest.mark.parametrize("text, line, words", [
    ("1,2,3\n4,5\n", 2, ["3 fields, as the first line", "2 fields: '4,5'"]),
    ("1,2\n3,x\n", 2, ["'x' in column 2"]),
    ("1,2\n\n# c\n3,4,5\n", 4, ["3 fields"]),
    ("a,b\ng1,1\n", 2, ["'g1' in column 1", "row names"]),
    ("a,b,c\n1,2\n", 2, ["as line 1 (the header)"]),
    ("1,,2\n", 1, ["'' in column 2"]),
    ("1,2\n3,1_000\n", 2, ["'1_000'"]),
])
def test_malformed_csv_names_the_line(tmp_path, text, line, words):
    f = tmp_path / "bad.csv"
    f.write_text(text)
    _refused(f, f"line {line} is malformed", *words)


def test_csv_not_utf8_is_refused(tmp_path):
    f = tmp_path / "bin.csv"
    f.write_bytes(b"\xff\xfe\x00\x01,2\n")
    _refused(f, "cannot read")


def _triplets(rng, shape=(6, 9), nnz=14):
    r = rng.integers(0, shape[0], nnz)
    c = rng.integers(0, shape[1], nnz)
    v = rng.standard_normal(nnz)
    r[0], c[0] = shape[0] - 1, shape[1] - 1  # the shape is the largest index
    return r, c, v


@pytest.mark.parametrize("suffix", [".coo", ".triplets", ".txt"])
def test_triplets_equal_scipy(tmp_path, suffix):
    rng = np.random.default_rng(5)
    r, c, v = _triplets(rng)
    r[3], c[3] = r[2], c[2]  # a duplicate: summed, as MatrixMarket
    want = sps.coo_matrix((v, (r, c)), shape=(6, 9)).toarray()
    f = tmp_path / f"one{suffix}"
    f.write_text("% a comment\nrow col value\n" + "".join(
        f"{i + 1} {j + 1} {float(x)!r}\n" for i, j, x in zip(r, c, v)))
    M = read_matrix(f)
    assert M.shape == (6, 9)
    np.testing.assert_allclose(M.toarray(), want, rtol=1e-15, atol=0)
    z = tmp_path / f"zero{suffix}"
    z.write_text("".join(f"{i}\t{j}  {float(x)!r}  # entry\n" for i, j, x in zip(r, c, v)))
    np.testing.assert_allclose(read_matrix(z, zero_based=True).toarray(), want, rtol=1e-15, atol=0)


def test_an_edge_list_is_a_pattern(tmp_path):
    f = tmp_path / "edges.txt"
    f.write_text("1 2\n2 3\n3 1\n")
    want = sps.coo_matrix((np.ones(3), ([0, 1, 2], [1, 2, 0])), shape=(3, 3)).toarray()
    assert_array_equal(read_matrix(f).toarray(), want)


def test_a_zero_index_in_a_one_based_file_says_zero_based(tmp_path):
    f = tmp_path / "z.coo"
    f.write_text("1 1 2\n0 3 1\n")
    _refused(f, "line 2 is malformed", "row indices from 1", "row index 0", "--zero-based")
    assert read_matrix(f, zero_based=True).shape == (2, 4)


@pytest.mark.parametrize("text, line, words", [
    ("1 2 3\n4 5\n", 2, ["3 fields (row col value)"]),
    ("1 2 3\n1.5 2 3\n", 2, ["a whole number for the row index", "'1.5'"]),
    ("1 2 3\n2 -1 3\n", 2, ["column indices from 1", "column index -1"]),
    ("1 2 x\n", 1, ["a number for the value", "'x'"]),
    ("1 2 3 4\n", 1, ["row col value (or row col)", "4 fields"]),
    ("1 99999999999999999999 1\n", 1, ["a whole number for the column index"]),
    ("1 9223372036854775807 1\n", 1, ["a column index below 2^62"]),
])
def test_malformed_triplets_name_the_line(tmp_path, text, line, words):
    f = tmp_path / "bad.triplets"
    f.write_text(text)
    _refused(f, f"line {line} is malformed", *words)


def test_triplet_indices_are_checked_before_allocating(tmp_path):
    f = tmp_path / "huge.coo"
    f.write_text(f"{2**61} 1 1.0\n")  # 2^61 rows: an indptr of 16 EiB
    _refused(f, "more memory than is free", "largest row index")


def test_header_only_and_comment_only_text_files_hold_no_data(tmp_path):
    f = tmp_path / "c.coo"
    f.write_text("% nothing\n")
    assert read_matrix(f).shape == (0, 0)
    h = tmp_path / "h.txt"
    h.write_text("row col value\n")
    assert read_matrix(h).shape == (0, 0)
