"""CPU tests of the benchmark datasets (benchmarks/datasets.py, benchmarks/datasets.py (prepare)).

The real datasets are read from ``<repo>/../shared/data``; those tests skip
when it is absent.  Building the 20 Newsgroups TF-IDF takes ~5 s, so its full
test runs only with ``GBDIST_SLOW_TESTS=1``; otherwise the raw archive's
document count and, when present, the prepared ``.bench_data/newsgroups.npz``
are checked instead.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile
from pathlib import Path

import functools

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:  # benchmarks/ is not an installed package
    sys.path.insert(0, str(REPO))

from benchmarks import datasets  # noqa: E402

DATA_DIR = Path(__file__).resolve().parents[2] / "shared" / "data"
PREPARED_DIR = REPO / ".bench_data"
SLOW = os.environ.get("GBDIST_SLOW_TESTS") == "1"

needs_data = pytest.mark.skipif(not DATA_DIR.is_dir(), reason=f"{DATA_DIR} not present")

# (rows, cols, nnz) as stated in each folder's PROVENANCE.md.
EXPECTED = {
    "movielens": (610, 9_724, 100_836),
    "tabula_muris": (1_067, 23_433, 1_913_799),
    "kos": (3_430, 6_906, 353_160),
    "newsgroups": (18_846, 173_753, 2_952_558),
    "sec_names": (100_000, 22_506, 1_852_358),
}
RATINGS = np.arange(1, 11) * 0.5


def assert_canonical(m):
    """float32 data, int32 indices, strictly increasing column indices in every row."""
    assert m.format == "csr"
    assert m.dtype == np.float32
    assert m.indices.dtype == np.int32
    assert m.indptr.dtype == np.int32
    assert m.indptr[0] == 0 and m.indptr[-1] == m.nnz
    steps = np.diff(m.indices.astype(np.int64))
    row_starts = m.indptr[1:-1]
    inside = np.ones(steps.size, dtype=bool)
    inside[row_starts[(row_starts > 0) & (row_starts < m.nnz)] - 1] = False
    assert np.all(steps[inside] > 0), "indices not sorted or duplicated within a row"
    assert m.indices.min(initial=0) >= 0 and m.indices.max(initial=0) < m.shape[1]


# --------------------------------------------------------------------------
# powerlaw
# --------------------------------------------------------------------------


SMALL = dict(n_rows=4_000, n_cols=3_000, nnz=120_000)


def test_powerlaw_shape_nnz_canonical():
    m, meta = datasets.powerlaw(**SMALL, seed=1)
    assert m.shape == (4_000, 3_000)
    assert abs(m.nnz - 120_000) <= 0.01 * 120_000
    assert_canonical(m)
    assert set(np.unique(m.data)) <= set(RATINGS.astype(np.float32))
    assert meta["name"] == "powerlaw" and meta["nnz"] == m.nnz and meta["shape"] == [4_000, 3_000]
    assert np.diff(m.indptr).min() >= 1  # min_row_degree


def test_powerlaw_reproducible_by_seed():
    a, _ = datasets.powerlaw(**SMALL, seed=5)
    b, _ = datasets.powerlaw(**SMALL, seed=5)
    c, _ = datasets.powerlaw(**SMALL, seed=6)
    for name in ("indptr", "indices", "data"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name))
    assert not (a.nnz == c.nnz and np.array_equal(a.indices, c.indices))


def test_powerlaw_skewed_degrees():
    m, meta = datasets.powerlaw(n_rows=20_000, n_cols=15_000, nnz=1_000_000, seed=2)
    rows = np.sort(np.diff(m.indptr))[::-1]
    cols = np.sort(np.bincount(m.indices, minlength=m.shape[1]))[::-1]
    # Long head: the top row / column far above the mean, the top 1% holding much.
    assert rows[0] > 10 * rows.mean()
    assert cols[0] > 10 * cols.mean()
    assert rows[: len(rows) // 100].sum() > 0.05 * m.nnz
    assert cols[: len(cols) // 100].sum() > 0.05 * m.nnz
    # Median well under the mean (right-skewed).
    assert np.median(rows) < 0.9 * rows.mean()
    # The max degrees follow the MovieLens-Large-scaled defaults (fractions of the other side).
    assert meta["max_row_degree"] == rows[0]
    assert abs(rows[0] - int(datasets.ML_LARGE_MAX_ROW / datasets.ML_LARGE_COLS * 15_000)) <= 2
    target_col = datasets.ML_LARGE_MAX_COL / datasets.ML_LARGE_ROWS * 20_000
    assert abs(cols[0] - target_col) < 0.1 * target_col


def test_powerlaw_explicit_max_degrees():
    m, meta = datasets.powerlaw(
        n_rows=5_000, n_cols=4_000, nnz=100_000, seed=3, max_row_degree=800, max_col_degree=1_500
    )
    assert meta["max_row_degree"] == 800
    assert abs(meta["max_col_degree"] - 1_500) < 150


def test_powerlaw_rejects_impossible():
    with pytest.raises(ValueError):
        datasets.powerlaw(n_rows=10, n_cols=10, nnz=90)
    with pytest.raises(ValueError):
        datasets.powerlaw(n_rows=1_000, n_cols=1_000, nnz=50_000, max_row_degree=20)


def test_load_dispatch_and_names():
    assert set(datasets.REAL_NAMES) < set(datasets.NAMES) and "powerlaw" in datasets.NAMES
    m, _ = datasets.load("powerlaw", None, n_rows=300, n_cols=400, nnz=3_000, seed=0)
    assert m.shape == (300, 400)
    with pytest.raises(KeyError):
        datasets.load("nope", DATA_DIR)


# --------------------------------------------------------------------------
# real datasets
# --------------------------------------------------------------------------


@functools.lru_cache(maxsize=None)
def load_raw(name):
    """Each raw dataset is built once per test session (treat the result as read-only)."""
    return datasets.load(name, DATA_DIR)


def check_expected(name, m, meta):
    rows, cols, nnz = EXPECTED[name]
    assert m.shape == (rows, cols)
    assert m.nnz == nnz
    assert meta["shape"] == [rows, cols] and meta["nnz"] == nnz and meta["name"] == name
    assert_canonical(m)


@needs_data
@pytest.mark.parametrize("name", ["movielens", "tabula_muris", "kos", "sec_names"])
def test_real_dataset_shape(name):
    m, meta = load_raw(name)
    check_expected(name, m, meta)


@needs_data
def test_movielens_values():
    m, _ = load_raw("movielens")
    assert set(np.unique(m.data)) <= set(RATINGS.astype(np.float32))
    assert np.diff(m.indptr).min() == 20 and np.diff(m.indptr).max() == 2_698


@needs_data
def test_tabula_muris_rows_are_cells():
    m, meta = load_raw("tabula_muris")
    assert meta["channel_rows"] == [596, 322, 149]
    assert np.all(m.data >= 1) and np.all(m.data == np.round(m.data))
    assert np.diff(m.indptr).min() == 258 and np.diff(m.indptr).max() == 6_829


@needs_data
def test_tfidf_rows_unit_norm():
    m, _ = load_raw("kos")
    norms = np.sqrt(np.asarray(m.multiply(m).sum(axis=1)).ravel())
    np.testing.assert_allclose(norms, 1.0, rtol=1e-5)


@needs_data
def test_sec_names_empty_rows():
    m, _ = load_raw("sec_names")
    row_nnz = np.diff(m.indptr)
    assert np.sum(row_nnz == 0) == 4  # names shorter than 3 characters after cleaning
    assert row_nnz.max() == 107


@needs_data
def test_newsgroups_document_count():
    path = DATA_DIR / "20newsgroups-bydate" / "20news-bydate.tar.xz"
    with tarfile.open(path, "r:xz") as tar:
        names = [mem.name for mem in tar if mem.isfile()]
    assert len(names) == 18_846
    assert sum(n.startswith("20news-bydate-train/") for n in names) == 11_314


@needs_data
@pytest.mark.skipif(not SLOW, reason="~5 s; set GBDIST_SLOW_TESTS=1")
def test_newsgroups_shape():
    m, meta = datasets.load("newsgroups", DATA_DIR)
    check_expected("newsgroups", m, meta)


@pytest.mark.skipif(not (PREPARED_DIR / "manifest.json").is_file(), reason="no prepared .bench_data")
@pytest.mark.parametrize("name", datasets.REAL_NAMES)
def test_prepared_dir_matches_provenance(name):
    m, meta = datasets.load(name, PREPARED_DIR)
    check_expected(name, m, meta)


@needs_data
def test_prepare_roundtrip(tmp_path):
    out = tmp_path / "prepared"
    manifest = datasets.prepare(DATA_DIR, out, names=["movielens", "kos"], log=lambda *_: None)
    assert datasets.is_prepared_dir(out) and not datasets.is_prepared_dir(DATA_DIR)
    assert set(manifest) == {"movielens", "kos"}
    for name in ("movielens", "kos"):
        a, meta = datasets.load(name, out)
        b, _ = load_raw(name)
        assert meta["npz_bytes"] == (out / f"{name}.npz").stat().st_size
        assert (a != b).nnz == 0
        assert_canonical(a)


def test_peers_import_without_gpu_libraries():
    code = "import sys, benchmarks.peers; assert 'cupy' not in sys.modules and 'torch' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], cwd=REPO, check=True)
