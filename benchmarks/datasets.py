"""Benchmark datasets as ``scipy.sparse.csr_matrix`` (float32, rows = samples).

Two kinds of ``data_dir`` are understood:

* a *raw* data directory (``../shared/data`` relative to the repository root),
  holding one folder per public dataset with its ``PROVENANCE.md``;
* a *prepared* directory written by :func:`prepare` (``python benchmarks/run.py
  data``, default ``.bench_data``), holding ``<name>.npz`` files (``scipy.sparse.save_npz``)
  and a ``manifest.json``.  This is what travels to the GPU machine, which has
  no copy of the raw data.

Every loader returns ``(matrix, meta)``: a CSR matrix with sorted indices, no
duplicate entries, ``float32`` data and ``int32`` indices, and a small dict
``{"name", "shape", "nnz", "source", ...}``.

The real datasets follow the shapes stated in each folder's PROVENANCE.md
(rows x cols, nnz):

* ``movielens``: users x movies, rating values -- 610 x 9,724, 100,836
* ``tabula_muris``: cells x genes, UMI counts, 3 channels stacked --
  1,067 x 23,433, 1,913,799
* ``kos``: docs x words, TF-IDF -- 3,430 x 6,906, 353,160
* ``newsgroups``: docs x tokens, TF-IDF -- 18,846 x 173,753, 2,952,558
* ``sec_names``: names x character 3-grams, TF-IDF -- 100,000 x 22,506, 1,852,358

TF-IDF is scikit-learn's default (raw counts x smooth idf, rows l2-normalised).

``powerlaw`` is generated (no files): a Zipf-like matrix shaped like MovieLens
Large (283,228 x 193,886, ~27.7M nonzeros) by default.
"""

from __future__ import annotations

import gzip
import json
import re
import tarfile
from pathlib import Path

import numpy as np
import scipy.io
import scipy.sparse as sp

REAL_NAMES = ("movielens", "tabula_muris", "kos", "newsgroups", "sec_names")
NAMES = REAL_NAMES + ("powerlaw",)

MANIFEST = "manifest.json"

# Folder of each real dataset inside a raw data directory.
_FOLDERS = {
    "movielens": "ml-latest-small",
    "tabula_muris": "tabula-muris-droplet",
    "kos": "uci-bow-kos",
    "newsgroups": "20newsgroups-bydate",
    "sec_names": "sec-edgar-company-names",
}

# Tabula Muris channels, stacked in this order (the order of PROVENANCE.md).
_TABULA_CHANNELS = ("Liver-10X_P7_0", "Liver-10X_P7_1", "Bladder-10X_P4_3")

# MovieLens ml-latest-small rating frequencies for 0.5, 1.0, ..., 5.0
# (measured on ratings.csv); used for the values of ``powerlaw``.
_RATING_PROBS = np.array(
    [0.0136, 0.0279, 0.0178, 0.0749, 0.0550, 0.1988, 0.1303, 0.2660, 0.0848, 0.1310]
)

# Shape of the paper's MovieLens Large matrix, the default for ``powerlaw``.
ML_LARGE_ROWS = 283_228
ML_LARGE_COLS = 193_886
ML_LARGE_NNZ = 27_753_444
ML_LARGE_MAX_ROW = 24_000
ML_LARGE_MAX_COL = 98_000


# --------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------


def canonical_csr(a) -> sp.csr_matrix:
    """Return ``a`` as CSR with float32 data, int32 indices, sorted, no duplicates."""
    m = sp.csr_matrix(a)
    m.sum_duplicates()  # also sorts the indices
    m.sort_indices()
    m = sp.csr_matrix(
        (
            m.data.astype(np.float32, copy=False),
            m.indices.astype(np.int32, copy=False),
            m.indptr.astype(np.int32, copy=False),
        ),
        shape=m.shape,
    )
    m.has_sorted_indices = True
    m.has_canonical_format = True
    return m


def _meta(name: str, m: sp.csr_matrix, source: str, **extra) -> dict:
    meta = {"name": name, "shape": [int(m.shape[0]), int(m.shape[1])], "nnz": int(m.nnz), "source": source}
    meta.update(extra)
    return meta


def _tfidf_from_counts(counts: sp.csr_matrix) -> sp.csr_matrix:
    """scikit-learn ``TfidfTransformer`` defaults (l2 norm, smooth idf) in float32."""
    from sklearn.feature_extraction.text import TfidfTransformer

    return TfidfTransformer().fit_transform(counts.astype(np.float32))


def is_prepared_dir(data_dir) -> bool:
    """True when ``data_dir`` holds prepared ``.npz`` files rather than raw folders."""
    d = Path(data_dir)
    return (d / MANIFEST).is_file() or any(d.glob("*.npz"))


# --------------------------------------------------------------------------
# raw loaders
# --------------------------------------------------------------------------


def movielens(data_dir):
    """ml-latest-small ratings: users x rated movies (ids compacted), values = rating."""
    path = Path(data_dir) / _FOLDERS["movielens"] / "ratings.csv"
    table = np.loadtxt(path, delimiter=",", skiprows=1, usecols=(0, 1, 2))
    _, rows = np.unique(table[:, 0].astype(np.int64), return_inverse=True)
    _, cols = np.unique(table[:, 1].astype(np.int64), return_inverse=True)
    m = sp.csr_matrix(
        (table[:, 2].astype(np.float32), (rows, cols)),
        shape=(int(rows.max()) + 1, int(cols.max()) + 1),
    )
    m = canonical_csr(m)
    return m, _meta("movielens", m, "ml-latest-small/ratings.csv", values="rating 0.5..5.0")


def tabula_muris(data_dir):
    """Tabula Muris droplet: the 3 channels stacked row-wise, cells x genes UMI counts.

    The .mtx files are genes x cells (see PROVENANCE.md); the shared dimension
    (genes) is detected and made the column axis.
    """
    folder = Path(data_dir) / _FOLDERS["tabula_muris"]
    mats = []
    for channel in _TABULA_CHANNELS:
        with gzip.open(folder / f"{channel}.matrix.mtx.gz", "rb") as fh:
            mats.append(sp.csr_matrix(scipy.io.mmread(fh)))
    rows_shared = len({m.shape[0] for m in mats}) == 1
    cols_shared = len({m.shape[1] for m in mats}) == 1
    if rows_shared and not cols_shared:
        mats = [m.T for m in mats]  # genes x cells -> cells x genes
    elif not cols_shared:
        raise ValueError(f"tabula_muris: channels share no dimension: {[m.shape for m in mats]}")
    m = canonical_csr(sp.vstack(mats, format="csr"))
    return m, _meta(
        "tabula_muris",
        m,
        "tabula-muris-droplet/*.matrix.mtx.gz",
        channels=list(_TABULA_CHANNELS),
        channel_rows=[int(x.shape[0]) for x in mats],
        values="UMI counts",
    )


def kos_counts(data_dir) -> sp.csr_matrix:
    """UCI docword.kos: raw word counts, docs x words."""
    path = Path(data_dir) / _FOLDERS["kos"] / "docword.kos.txt.gz"
    with gzip.open(path, "rb") as fh:
        numbers = np.array(fh.read().split(), dtype=np.int64)
    n_docs, n_words, nnz = (int(x) for x in numbers[:3])
    triples = numbers[3:].reshape(-1, 3)
    if triples.shape[0] != nnz:
        raise ValueError(f"kos: header says {nnz} entries, found {triples.shape[0]}")
    counts = sp.csr_matrix(
        (triples[:, 2].astype(np.float32), (triples[:, 0] - 1, triples[:, 1] - 1)),
        shape=(n_docs, n_words),
    )
    return canonical_csr(counts)


def kos(data_dir):
    """UCI Bag of Words KOS as TF-IDF (sklearn TfidfTransformer defaults), docs x words."""
    m = canonical_csr(_tfidf_from_counts(kos_counts(data_dir)))
    return m, _meta("kos", m, "uci-bow-kos/docword.kos.txt.gz", values="tf-idf (sklearn defaults, l2 rows)")


def newsgroups_texts(data_dir):
    """The 18,846 raw messages (train split first, then test; each sorted by path)."""
    path = Path(data_dir) / _FOLDERS["newsgroups"] / "20news-bydate.tar.xz"
    texts = []
    with tarfile.open(path, "r:xz") as tar:
        for member in tar:
            if not member.isfile():
                continue
            parts = member.name.split("/")
            split = 0 if parts[0].endswith("train") else 1
            data = tar.extractfile(member).read()
            texts.append((split, member.name, data.decode("latin-1")))
    texts.sort(key=lambda t: (t[0], t[1]))
    return [t[2] for t in texts], [t[1] for t in texts]


def newsgroups(data_dir):
    """20 Newsgroups (bydate, train + test) as TF-IDF with sklearn TfidfVectorizer defaults.

    Whole messages (headers included), lowercased, token pattern
    ``(?u)\\b\\w\\w+\\b`` -- the tokenisation PROVENANCE.md used for its shape.
    """
    from sklearn.feature_extraction.text import TfidfVectorizer

    texts, _ = newsgroups_texts(data_dir)
    m = canonical_csr(TfidfVectorizer(dtype=np.float32).fit_transform(texts))
    return m, _meta(
        "newsgroups",
        m,
        "20newsgroups-bydate/20news-bydate.tar.xz",
        values="tf-idf (sklearn TfidfVectorizer defaults)",
        row_order="train then test, each sorted by path",
    )


# string_grouper's default cleaning: drop , - . / and whitespace (after lowercasing).
_SEC_CLEAN = re.compile(r"[,-./]|\s")


def sec_ngrams(name: str, n: int = 3) -> list:
    """Character n-grams of a company name after string_grouper's default cleaning."""
    s = _SEC_CLEAN.sub("", name.lower())
    return [s[i : i + n] for i in range(len(s) - n + 1)]


def sec_names(data_dir):
    """SEC EDGAR company names as character 3-gram TF-IDF (string_grouper style)."""
    from sklearn.feature_extraction.text import TfidfVectorizer

    path = Path(data_dir) / _FOLDERS["sec_names"] / "company_names.json"
    with open(path, encoding="utf-8") as fh:
        names = json.load(fh)
    vec = TfidfVectorizer(analyzer=sec_ngrams, dtype=np.float32)
    m = canonical_csr(vec.fit_transform(names))
    return m, _meta(
        "sec_names",
        m,
        "sec-edgar-company-names/company_names.json",
        values="tf-idf of char 3-grams (string_grouper cleaning, sklearn defaults)",
    )


_RAW_LOADERS = {
    "movielens": movielens,
    "tabula_muris": tabula_muris,
    "kos": kos,
    "newsgroups": newsgroups,
    "sec_names": sec_names,
}


# --------------------------------------------------------------------------
# generated power-law matrix
# --------------------------------------------------------------------------


def _zipf_degrees(n: int, total: float, d_max: float, floor: float) -> np.ndarray:
    """Rank-ordered degrees ``max(floor, d_max * r**-alpha)``, alpha solved so they sum to ``total``."""
    ranks = np.arange(1, n + 1, dtype=np.float64)

    def degrees(alpha):
        return np.maximum(floor, d_max * ranks ** (-alpha))

    if degrees(0.0).sum() < total:
        raise ValueError(f"powerlaw: max degree {d_max} too small for {total} nonzeros over {n} lines")
    if degrees(50.0).sum() > total:
        raise ValueError(f"powerlaw: {total} nonzeros too few for max degree {d_max} and floor {floor}")
    lo, hi = 0.0, 50.0
    for _ in range(100):
        mid = 0.5 * (lo + hi)
        if degrees(mid).sum() > total:
            lo = mid
        else:
            hi = mid
    return degrees(0.5 * (lo + hi))


def _log_bisect(fn, goal, lo, hi, steps=45):
    """Solve ``fn(x) = goal`` elementwise for increasing ``fn`` by bisection on log(x)."""
    lo = np.full(np.shape(goal), np.log(lo))
    hi = np.full(np.shape(goal), np.log(hi))
    for _ in range(steps):
        mid = 0.5 * (lo + hi)
        high = fn(np.exp(mid)) > goal
        hi = np.where(high, mid, hi)
        lo = np.where(high, lo, mid)
    return np.exp(0.5 * (lo + hi))


def _expected_fill(scale, rates, sizes):
    """``sum_k sizes_k * (1 - exp(-scale_m * rates_k))`` for each ``scale_m``."""
    return (sizes * -np.expm1(-np.outer(scale, rates))).sum(axis=1)


def _fit_column_probs(row_deg, col_target, n_bins=384, n_iter=6):
    """Column draw probabilities giving each column about ``col_target`` rows.

    Model (Poissonisation of "draw with replacement until ``d_i`` distinct"):
    row ``i`` holds column ``j`` with probability ``1 - exp(-t_i p_j)`` where
    ``t_i`` solves ``sum_j (1 - exp(-t_i p_j)) = d_i``.  Alternately solve the
    ``t_i`` for given ``p`` and the ``p_j`` from ``sum_i (1 - exp(-t_i p_j)) =
    c_j``.  Rows and columns are grouped into log-spaced bins (rank order for
    columns, degree for rows), so this costs well under a second at full size.
    ``col_target`` must be sorted in decreasing order.
    """
    n_cols = col_target.size
    # Column bins over the rank: representative target and member count.
    edges = np.unique(np.round(np.geomspace(1, n_cols + 1, n_bins)).astype(np.int64)) - 1
    col_size = np.diff(edges).astype(np.float64)
    col_rep = np.sqrt(col_target[edges[:-1]] * col_target[edges[1:] - 1])
    col_rep = np.minimum(col_rep, 0.999 * row_deg.size)
    # Row groups: log-spaced degree bins, representative = mean degree.
    deg = row_deg[row_deg > 0].astype(np.float64)
    deg_edges = np.unique(np.geomspace(deg.min(), deg.max() * (1 + 1e-9), n_bins))
    which = np.clip(np.searchsorted(deg_edges, deg, side="right") - 1, 0, deg_edges.size - 1)
    row_size = np.bincount(which).astype(np.float64)
    row_rep = np.bincount(which, weights=deg) / np.maximum(row_size, 1)
    row_rep = row_rep[row_size > 0]
    row_size = row_size[row_size > 0]

    p = col_rep / (col_size * col_rep).sum()  # start: probability ~ target
    for _ in range(n_iter):
        # t per row group: sum_j size_j (1 - exp(-t p_j)) = d
        t = _log_bisect(lambda t_try: _expected_fill(t_try, p, col_size), row_rep, 1e-3, 1e12)
        # p per column bin: sum_i size_i (1 - exp(-t_i p)) = c
        p = _log_bisect(lambda p_try: _expected_fill(p_try, t, row_size), col_rep, 1e-16, 1e3)
        p = p / (col_size * p).sum()  # (t, p) -> (k t, p / k) is the same model
    # Interpolate in log-log over the rank, then normalise over all columns.
    mid_rank = np.sqrt((edges[:-1] + 1.0) * edges[1:])
    ranks = np.arange(1, n_cols + 1, dtype=np.float64)
    prob = np.exp(np.interp(np.log(ranks), np.log(mid_rank), np.log(p)))
    return prob / prob.sum()


# The paper-scale shapes of issues 29 and 31 (the paper's Table 2: MovieLens Large, scRNA,
# NY Times bag of words, SEC EDGAR): name -> (generator, rows, cols, nonzeros).
PAPER_SHAPES = {
    "ml": ("powerlaw", 283_228, 193_886, 21_000_000),
    "dense": ("uniform", 66_000, 26_000, 108_000_000),
    "wide": ("powerlaw", 300_000, 103_000, 36_000_000),
    "tall": ("powerlaw", 663_000, 858_000, 3_800_000),
}


def paper_shape(name: str, seed: int = 0):
    """The CSR of one of :data:`PAPER_SHAPES` (float32 values)."""
    gen, rows, cols, nnz = PAPER_SHAPES[name]
    if gen == "uniform":
        return uniform(rows, cols, nnz, seed=seed)
    return powerlaw(rows, cols, nnz, seed=seed)[0]


def uniform(rows: int, cols: int, nnz: int, seed: int = 0):
    """A uniformly random CSR (float32 values in (0, 1]) with about ``nnz`` entries, made
    in O(nnz) without a sort: the gaps between consecutive stored positions (row-major keys)
    are geometric with p = nnz / (rows * cols), so their running sum is already sorted and
    unique. The dense-ish paper shape (66K x 26K, 108M nonzeros) takes seconds, where
    sorting random keys took minutes."""
    rng = np.random.default_rng(seed)
    total = rows * cols
    p = min(1.0, nnz / total)
    keys = np.cumsum(rng.geometric(p, size=int(nnz * 1.02 + 64)), dtype=np.int64) - 1
    keys = keys[:np.searchsorted(keys, total)]
    r, c = np.divmod(keys, cols)
    indptr = np.zeros(rows + 1, dtype=np.int64)
    np.cumsum(np.bincount(r, minlength=rows), out=indptr[1:])
    vals = rng.random(keys.size, dtype=np.float32) + np.float32(1e-3)
    return sp.csr_matrix((vals, c.astype(np.int32), indptr.astype(np.int32)),
                         shape=(rows, cols))


def powerlaw(
    n_rows: int = ML_LARGE_ROWS,
    n_cols: int = ML_LARGE_COLS,
    nnz: int = ML_LARGE_NNZ,
    seed: int = 0,
    max_row_degree: int | None = None,
    max_col_degree: int | None = None,
    min_row_degree: int = 1,
    max_rounds: int = 60,
):
    """Generate a sparse matrix with Zipf-like row and column degrees.

    Row ``r`` (by popularity rank) gets ``max(min_row_degree, max_row_degree * r**-a)``
    nonzeros (stochastically rounded), ``a`` solved so the total is ``nnz``.  Its
    columns are drawn without repetition with probabilities proportional to
    ``max_col_degree * c**-b`` (``b`` solved likewise), so the expected degree of
    column ``c`` is about ``max_col_degree * c**-b``.  Rows and columns are then
    randomly permuted, so long rows and popular columns are scattered.  Values
    follow the MovieLens rating distribution over 0.5, 1.0, ..., 5.0.

    With the defaults (MovieLens Large: 283,228 x 193,886, ~27.7M nonzeros,
    longest row ~24K, most popular column ~98K) this takes some seconds and
    about 1.5 GB of peak host memory.  When the max degrees are not given they
    are scaled from MovieLens Large: the smaller of the same max/mean degree
    ratio and the same fraction of the other dimension.

    Sampling is fully vectorised: each round draws the missing entries of all
    rows at once (with replacement, oversampled by the per-row acceptance rate),
    drops repeats and entries already present, and keeps per row only as many
    as are still missing.  Rows whose degree is close to ``n_cols`` may end a
    little short after ``max_rounds``; ``meta["nnz_target"]`` records the goal.

    Returns ``(csr, meta)``; the CSR has float32 data, int32 indices, sorted
    indices and no duplicates.  Same arguments, same matrix.
    """
    if n_rows <= 0 or n_cols <= 0 or nnz <= 0:
        raise ValueError("powerlaw: n_rows, n_cols and nnz must be positive")
    if nnz > 0.5 * n_rows * n_cols:
        raise ValueError("powerlaw: nnz must be at most half of n_rows * n_cols")
    if n_rows * n_cols >= 2**62:
        raise ValueError("powerlaw: matrix too large for int64 keys")
    rng = np.random.default_rng(seed)

    mean_row = nnz / n_rows
    mean_col = nnz / n_cols
    if max_row_degree is None:
        ratio = ML_LARGE_MAX_ROW / (ML_LARGE_NNZ / ML_LARGE_ROWS)
        frac = ML_LARGE_MAX_ROW / ML_LARGE_COLS
        max_row_degree = max(int(np.ceil(mean_row)), int(min(mean_row * ratio, frac * n_cols)))
    if max_col_degree is None:
        ratio = ML_LARGE_MAX_COL / (ML_LARGE_NNZ / ML_LARGE_COLS)
        frac = ML_LARGE_MAX_COL / ML_LARGE_ROWS
        max_col_degree = max(int(np.ceil(mean_col)), int(min(mean_col * ratio, frac * n_rows)))
    max_row_degree = min(int(max_row_degree), n_cols)

    # Target row degrees: Zipf by rank, stochastic rounding keeps the expected sum.
    row_deg = _zipf_degrees(n_rows, nnz, max_row_degree, min_row_degree)
    base = np.floor(row_deg)
    target = (base + (rng.random(n_rows) < row_deg - base)).astype(np.int64)
    target = np.minimum(target, n_cols)

    # Column sampling probabilities, fitted so each column's expected degree is
    # its Zipf target (a row cannot hold a popular column twice, so plain
    # probability ~ target would leave the popular columns short).
    col_target = _zipf_degrees(n_cols, nnz, max_col_degree, 0.0)
    col_prob = _fit_column_probs(target, col_target)
    col_cdf = np.cumsum(col_prob)
    col_cdf /= col_cdf[-1]

    # Random relabelling, applied as entries are drawn.
    row_perm = rng.permutation(n_rows).astype(np.int64)
    col_perm = rng.permutation(n_cols).astype(np.int64)

    keys = np.empty(0, dtype=np.int64)  # sorted row * n_cols + col
    missing = target.copy()  # indexed by rank
    accept = np.full(n_rows, 0.9)  # estimated fraction of draws that are new
    for _ in range(max_rounds):
        todo = np.flatnonzero(missing > 0)
        if todo.size == 0:
            break
        draws = np.ceil(missing[todo] / np.maximum(accept[todo], 0.02) * 1.05).astype(np.int64) + 1
        draws = np.minimum(draws, 20 * n_cols)
        ranks = np.repeat(todo, draws)
        cols = np.searchsorted(col_cdf, rng.random(ranks.size), side="right")
        np.minimum(cols, n_cols - 1, out=cols)
        new = row_perm[ranks] * n_cols + col_perm[cols]
        del cols

        # First occurrence of each key, in draw order (random within a row).
        _, first = np.unique(new, return_index=True)
        first.sort()
        new = new[first]
        ranks = ranks[first]
        if keys.size:
            pos = np.searchsorted(keys, new)
            pos = np.minimum(pos, keys.size - 1)
            fresh = keys[pos] != new
            new = new[fresh]
            ranks = ranks[fresh]

        # Keep per row only as many fresh entries as are still missing.
        # ``ranks`` is grouped by row (np.repeat order is kept by the sort above).
        starts = np.flatnonzero(np.r_[True, ranks[1:] != ranks[:-1]])
        counts = np.diff(np.r_[starts, ranks.size])
        within = np.arange(ranks.size) - np.repeat(starts, counts)
        keep = within < missing[ranks]
        got = np.bincount(ranks, minlength=n_rows)  # fresh distinct draws per row
        accept[todo] = np.clip(got[todo] / draws, 0.02, 1.0)

        new = np.sort(new[keep])
        missing -= np.bincount(ranks[keep], minlength=n_rows)
        # Both parts sorted: a stable sort (timsort) merges the two runs in linear time.
        keys = np.sort(np.concatenate([keys, new]), kind="stable")
        del new, ranks, keep, within

    rows = keys // n_cols
    indices = (keys - rows * n_cols).astype(np.int32)
    del keys
    indptr = np.zeros(n_rows + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows, minlength=n_rows), out=indptr[1:])
    del rows
    if indptr[-1] >= 2**31:
        raise ValueError("powerlaw: more than 2**31 nonzeros do not fit int32 indptr")
    values = (rng.choice(_RATING_PROBS.size, size=indices.size, p=_RATING_PROBS / _RATING_PROBS.sum()) + 1) * 0.5
    m = sp.csr_matrix(
        (values.astype(np.float32), indices, indptr.astype(np.int32)),
        shape=(n_rows, n_cols),
    )
    m.has_sorted_indices = True
    m.has_canonical_format = True
    row_nnz = np.diff(m.indptr)
    col_nnz = np.bincount(m.indices, minlength=n_cols)
    meta = _meta(
        "powerlaw",
        m,
        "generated",
        seed=int(seed),
        nnz_target=int(nnz),
        max_row_degree=int(row_nnz.max()),
        max_col_degree=int(col_nnz.max()),
        values="MovieLens-like ratings 0.5..5.0",
    )
    return m, meta


# --------------------------------------------------------------------------
# prepared (.npz) directories and the entry point
# --------------------------------------------------------------------------


def load_prepared(name: str, data_dir):
    """Load ``<data_dir>/<name>.npz`` written by :func:`prepare`."""
    d = Path(data_dir)
    path = d / f"{name}.npz"
    if not path.is_file():
        raise FileNotFoundError(f"{path} not found (run: python benchmarks/run.py data)")
    m = canonical_csr(sp.load_npz(path))
    meta = None
    if (d / MANIFEST).is_file():
        with open(d / MANIFEST, encoding="utf-8") as fh:
            meta = json.load(fh).get(name)
    if meta is None:
        meta = _meta(name, m, str(path))
    return m, meta


def load(name: str, data_dir=None, **kwargs):
    """Load dataset ``name`` (one of ``NAMES``) as ``(csr_matrix, meta)``.

    ``data_dir`` is either the raw data directory or a prepared ``.npz``
    directory (detected automatically).  ``powerlaw`` ignores ``data_dir`` and
    passes ``kwargs`` to :func:`powerlaw`.
    """
    if name == "powerlaw":
        return powerlaw(**kwargs)
    if name not in _RAW_LOADERS:
        raise KeyError(f"unknown dataset {name!r}; known: {', '.join(NAMES)}")
    if data_dir is None:
        raise ValueError("data_dir is required for the real datasets")
    if is_prepared_dir(data_dir):
        return load_prepared(name, data_dir)
    return _RAW_LOADERS[name](data_dir)


# --------------------------------------------------------------------------
# writing a prepared directory (``python benchmarks/run.py data``)
# --------------------------------------------------------------------------

MIB = 1024 * 1024


def prepare(data_dir, out_dir, names=REAL_NAMES, log=print) -> dict:
    """Build each dataset from the raw ``data_dir`` and write it to ``out_dir`` as
    ``<name>.npz`` (compressed, float32 values, int32 indices); ``manifest.json`` holds
    each dataset's metadata plus file size and build time. Returns the manifest. The GPU
    machine has no copy of ``../shared/data`` and receives at most 64 MiB with the
    working tree, so the matrices are built here once and carried."""
    import time
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    manifest_path = out / MANIFEST
    manifest = {}
    if manifest_path.is_file():
        with open(manifest_path, encoding="utf-8") as fh:
            manifest = json.load(fh)
    for name in names:
        t0 = time.perf_counter()
        m, meta = load(name, data_dir)
        build_s = time.perf_counter() - t0
        path = out / f"{name}.npz"
        sp.save_npz(path, m, compressed=True)
        meta = dict(meta)
        meta["npz_bytes"] = path.stat().st_size
        meta["build_seconds"] = round(build_s, 2)
        manifest[name] = meta
        log(f"{name:13s} {m.shape[0]:>7d} x {m.shape[1]:<7d} nnz {m.nnz:>9d}  "
            f"{meta['npz_bytes'] / MIB:6.2f} MiB  built in {build_s:5.2f} s")
    with open(manifest_path, "w", encoding="utf-8") as fh:
        json.dump(manifest, fh, indent=2, sort_keys=True)
    return manifest


def add_arguments(p) -> None:
    p.add_argument("--data-dir", default="../shared/data", help="raw data directory")
    p.add_argument("--out", default=".bench_data", help="output directory for the .npz files")
    p.add_argument("--names", nargs="+", default=list(REAL_NAMES), choices=list(REAL_NAMES),
                   help="datasets to write (default: all real ones)")
    p.add_argument("--budget-mib", type=float, default=45.0,
                   help="size limit for the whole directory (the device copy takes 64 MiB)")


def run(args) -> dict:
    """The ``data`` tool: write the prepared directory; ``failed`` when over the budget
    (leave a dataset out with ``--names``)."""
    if is_prepared_dir(args.data_dir):
        raise SystemExit(f"{args.data_dir} is a prepared directory; give the raw data directory")
    manifest = prepare(args.data_dir, args.out, args.names)
    total = sum(p.stat().st_size for p in Path(args.out).iterdir() if p.is_file())
    print(f"total {total / MIB:.2f} MiB in {args.out}")
    over = total > args.budget_mib * MIB
    if over:
        print(f"over the {args.budget_mib:.0f} MiB budget: leave a dataset out with --names")
    return {"manifest": manifest, "total_bytes": total, "failed": over}


def add_source_arguments(p) -> None:
    """``--data-dir`` (prepared ``.npz`` sets, else ../shared/data) and ``--device``: the
    options every data-set section takes."""
    root = Path(__file__).resolve().parents[1]
    default_data = root / ".bench_data"
    p.add_argument("--data-dir", default=str(default_data if default_data.is_dir()
                                             else root.parent / "shared" / "data"),
                   help="prepared .npz sets (run.py data) or the raw ../shared/data")
    p.add_argument("--device", choices=("cuda", "cpu"), default=None,
                   help="default: cuda when CuPy finds a GPU, else cpu")
