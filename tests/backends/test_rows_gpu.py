"""The fused device passes (kernels/rows.cuh, gbdist/backends/cuda/rows.py) against the
NumPy paths of the functions they replace: validation facts (corrupt inputs of each
kind too), row hashes, identical pairs and the write of d(a, a), row conditioning, the
non-finite count of a result; float32/float64 values, int32/int64 indices, empty rows,
duplicate rows, NaN/±inf, -0.0."""
import numpy as np
import pytest
import scipy.sparse as sps

from gbdist.backends import rows as host_rows
from gbdist.runtime import invariance
from gbdist.errors import CorruptInputError
from gbdist.inputs import check_compressed, check_device_csr
from own_distances import own_distances  # gbdist's own metric and dtype path

pytestmark = pytest.mark.gpu  # needs CuPy and an NVIDIA GPU (skipped without: tests/conftest.py)

cupy = pytest.importorskip("cupy")
rows = pytest.importorskip("gbdist.backends.cuda.rows")

TYPES = [(v, i) for v in (np.float32, np.float64) for i in (np.int32, np.int64)]


def _csr(seed, dtype, itype, m=60, k=40, density=0.2, special=False):
    rng = np.random.default_rng(seed)
    X = sps.random(m, k, density=density, random_state=rng, format="csr")
    X = sps.csr_matrix(X)
    X.data = X.data * 4 - 1
    X.data[X.data == 0] = 0.5
    dense = rng.integers(1, 64, (2, k)) / 8  # full rows of binary fractions: exact sums
    X = sps.vstack([X, X[:7], sps.csr_matrix((3, k)), sps.csr_matrix(dense)]).tocsr()
    X.sort_indices()
    data = X.data.astype(dtype)
    if special:
        data[rng.integers(0, data.shape[0], 3)] = np.nan
        data[rng.integers(0, data.shape[0], 2)] = np.inf
        data[rng.integers(0, data.shape[0], 2)] = -np.inf
    return X.indptr.astype(itype), X.indices.astype(itype), data, X.shape


def _dev(*arrays):
    return tuple(cupy.asarray(a) for a in arrays)


def _host_facts(ip, idx, data):
    n = idx.shape[0]
    last = min(max(int(ip[-1]), 0), n)
    live = data[:last].astype(np.float64)
    notnan = live[~np.isnan(live)]
    return {"first": int(ip[0]), "last": int(ip[-1]), "decreasing": int(np.sum(ip[1:] < ip[:-1])),
            "lo": int(idx[:last].min()) if last else None, "hi": int(idx[:last].max()) if last else None,
            "nan": int(np.isnan(live).sum()), "inf": int(np.isinf(live).sum()),
            "max_abs": float(np.abs(notnan).max()) if notnan.size else 0.0}


@pytest.mark.parametrize("vt,it", TYPES)
@pytest.mark.parametrize("special", [False, True])
def test_check_facts_match_numpy(vt, it, special):
    ip, idx, data, _ = _csr(1, vt, it, special=special)
    got = rows.check_facts(*_dev(ip, idx, data))
    want = _host_facts(ip, idx, data)
    for key, v in want.items():
        if v is not None:
            assert got[key] == v, key
    dense = data.copy()
    got = rows.check_facts(None, None, cupy.asarray(dense))
    assert got["nan"] == int(np.isnan(dense).sum()) and got["inf"] == int(np.isinf(dense).sum())


def _corruptions(ip, idx, k):
    out = {}
    a = ip.copy(); a[0] = 1; out["start"] = (a, idx)  # noqa: E702
    a = ip.copy(); a[-1] = idx.shape[0] + 5; out["end"] = (a, idx)  # noqa: E702
    a = ip.copy(); a[5], a[6] = a[6] + 3, a[5]; out["decreasing"] = (a, idx)  # noqa: E702
    b = idx.copy(); b[4] = k; out["high"] = (ip, b)  # noqa: E702
    b = idx.copy(); b[9] = -1; out["negative"] = (ip, b)  # noqa: E702
    return out


@pytest.mark.parametrize("vt,it", TYPES)
def test_corrupt_inputs_are_refused_like_on_the_host(vt, it):
    ip, idx, data, (m, k) = _csr(2, vt, it)
    check_device_csr(*_dev(ip, idx, data), (m, k), "X")  # a valid one passes
    for what, (a, b) in _corruptions(ip, idx, k).items():
        with pytest.raises(CorruptInputError):
            check_compressed(a, b, data, m, k, "X")  # the host refuses it ...
        with pytest.raises(CorruptInputError):  # ... and so does the device
            check_device_csr(*_dev(a, b, data), (m, k), "X")


def test_device_facts_report_nonfinite_and_max_abs():
    ip, idx, data, shape = _csr(3, np.float32, np.int32, special=True)
    facts = check_device_csr(*_dev(ip, idx, data), shape, "X", ensure_all_finite=False)
    fin = data[np.isfinite(data)]
    assert facts["nonfinite"] is True and facts["max_abs"] == np.inf
    ip, idx, data, shape = _csr(3, np.float64, np.int64)
    facts = check_device_csr(*_dev(ip, idx, data), shape, "X")
    fin = np.abs(data)
    assert facts["nonfinite"] is False and facts["max_abs"] == float(fin.max())


@pytest.mark.parametrize("vt,it", TYPES)
def test_row_hashes_equal_numpy(vt, it):
    ip, idx, data, _ = _csr(4, vt, it, special=True)
    data[::7] = -0.0 * np.sign(data[::7])  # -0.0 hashes as 0.0
    want = host_rows.row_hashes(ip, idx, data, np)
    got = rows.row_hashes(*_dev(ip, idx, data)).get()
    np.testing.assert_array_equal(got, want)
    via = host_rows.row_hashes(*_dev(ip, idx, data), xp=cupy).get()
    np.testing.assert_array_equal(via, want)


@pytest.mark.parametrize("vt,it", TYPES)
def test_identical_pairs_equal_numpy(vt, it):
    ip, idx, data, _ = _csr(5, vt, it, special=True)
    ip2, idx2, data2, _ = _csr(6, vt, it)
    for left, right in (((ip, idx, data), (ip, idx, data)), ((ip, idx, data), (ip2, idx2, data2)),
                        ((ip2, idx2, data2), (ip, idx, data))):
        want = sorted(zip(*map(list, host_rows.identical_pairs(left, right, np))))
        dl, dr = _dev(*left), _dev(*right)
        got = sorted(zip(*(a.get().tolist() for a in host_rows.identical_pairs(dl, dr, cupy))))
        assert got == want and len(want) > 0
    # the same device arrays on both sides (a self-join): hashed once, same answer
    d = _dev(ip, idx, data)
    got = sorted(zip(*(a.get().tolist() for a in rows.identical_pairs(d, d))))
    assert got == sorted(zip(*map(list, host_rows.identical_pairs((ip, idx, data), (ip, idx, data)))))


@pytest.mark.parametrize("vt,it", TYPES)
def test_write_self_value_matches_numpy(vt, it):
    ip, idx, data, _ = _csr(7, vt, it)
    m = ip.shape[0] - 1
    rng = np.random.default_rng(0)
    out = rng.random((m, m)).astype(vt)
    out[rng.random((m, m)) < 0.05] = np.nan
    out[rng.random((m, m)) < 0.05] = np.inf
    i, j = host_rows.identical_pairs((ip, idx, data), (ip, idx, data), np)
    want = out.copy()
    fin = np.isfinite(want[i, j])
    want[i[fin], j[fin]] = 0.25
    got = cupy.asarray(out)
    d = _dev(ip, idx, data)
    rows.write_self_value(got, d, d, 0.25)
    np.testing.assert_array_equal(got.get(), want)
    assert fin.sum() > m // 2


@pytest.mark.parametrize("vt,it", TYPES)
@pytest.mark.parametrize("shift,scale", [(False, True), (True, False), (True, True)])
def test_condition_rows_matches_numpy(vt, it, shift, scale):
    rng = np.random.default_rng(8)
    ip, idx, data, (m, k) = _csr(8, vt, it)
    # full rows (shifted), rows of huge / tiny values (scaled or refused), a NaN and an inf
    # row; every full row holds binary fractions (times a power of two), so its sum is exact
    # in any order and the means and shifted values are the host's bit for bit
    full = sps.csr_matrix(1e6 + rng.integers(1, 64, (4, k)) / 8)
    frac = rng.integers(1, 64, (2, k)) / 8
    X = sps.vstack([sps.csr_matrix((data.astype(np.float64), idx, ip), shape=(m, k)), full,
                    sps.csr_matrix(frac * 2.0 ** 100), sps.csr_matrix(frac * 2.0 ** -100)])
    X = sps.csr_matrix(X)
    X.data[X.indptr[m + 1]] = np.nan
    X.data[X.indptr[m + 2] + 3] = np.inf
    ip, idx, d = X.indptr.astype(it), X.indices.astype(it), X.data.astype(vt)
    inv = invariance.Invariance(scale, shift, "")
    want = host_rows.condition_rows(ip, d, k, inv, np)
    got = host_rows.condition_rows(cupy.asarray(ip), cupy.asarray(d), k, inv, cupy).get()
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("vt", [np.float32, np.float64])
def test_count_nonfinite(vt):
    rng = np.random.default_rng(9)
    x = rng.random((300, 257)).astype(vt)
    assert rows.count_nonfinite(cupy.asarray(x)) == 0
    x[rng.random(x.shape) < 0.01] = np.nan
    x[rng.random(x.shape) < 0.01] = -np.inf
    assert rows.count_nonfinite(cupy.asarray(x)) == int((~np.isfinite(x)).sum()) > 0


@pytest.mark.parametrize("metric", ["cosine", "manhattan", "correlation", "euclidean"])
@pytest.mark.parametrize("vt", [np.float32, np.float64])
def test_end_to_end_through_the_fused_passes_equals_the_cpu(metric, vt):
    """Validation facts, conditioning, exact d(a, a) and the result repair together:
    duplicate rows (exact self value), an empty row, rows of huge values (overflow risk:
    the repair recomputes them on the host) — the CPU backend's answer within 1e-5."""
    import cupyx.scipy.sparse as cps
    import gbdist as gb
    rng = np.random.default_rng(10)
    X = sps.random(40, 30, density=0.3, random_state=rng, format="csr")
    X = sps.vstack([X, X[:5], sps.csr_matrix((1, 30)), sps.csr_matrix(rng.random((2, 30)) * 1e25)])
    X = sps.csr_matrix(X, dtype=vt)
    Q = sps.csr_matrix(X[::3])
    want = own_distances(Q, X, metric=metric, backend="cpu")
    got = own_distances(cps.csr_matrix(Q), cps.csr_matrix(X), metric=metric, backend="cuda").get()
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    ok = np.isfinite(want)
    np.testing.assert_allclose(got[ok], want[ok], rtol=1e-5, atol=1e-5)
    self_x = own_distances(cps.csr_matrix(X), metric=metric, backend="cuda").get()
    d = np.diagonal(self_x)
    assert np.all(d[np.isfinite(d)] == 0.0)  # proven d(a, a) = 0, written exactly
    for i in range(5):  # the duplicated rows equal their originals exactly
        assert self_x[i, 40 + i] == 0.0 or not np.isfinite(self_x[i, 40 + i])
