"""The accuracy rule on device operands (issue 26): its statistics are CuPy reductions
on the GPU, and the CUDA backend takes the decision the CPU takes for the same data,
within the tolerance the CPU tests hold it to against SciPy / scikit-learn in float64
(tests/compiler/test_accuracy_rule.py, tests/front/test_row_transforms.py). A decision
that needs a union summed as written runs the CUDA code generator's pass for it
(``codegen.DIRECT_UNION``, on); with the pass off, the device keeps the rewrite and warns."""
import logging
import re

import numpy as np
import pytest
from scipy.spatial.distance import cdist

import gbdist as gb
from gbdist.backends.cuda import codegen

pytestmark = pytest.mark.gpu  # needs CuPy and an NVIDIA GPU (skipped without: tests/conftest.py)

cupy = pytest.importorskip("cupy")


@pytest.fixture(autouse=True)
def _device_rule(monkeypatch):
    """The rule on device operands (runtime/accuracy.DEVICE_RULE, on by default), whatever
    another test left."""
    from gbdist.runtime import accuracy
    monkeypatch.setattr(accuracy, "DEVICE_RULE", True)


def _blobs(offset, m=200, k=12):
    from sklearn.datasets import make_blobs
    return make_blobs(m, k, random_state=0)[0] + offset  # > FEW_COLUMNS: the rule decides


def _latlon(seed, m):
    rng = np.random.default_rng(seed)
    return np.c_[rng.uniform(-1.5, 1.5, m), rng.uniform(-np.pi, np.pi, m)]


def _decisions(caplog, fn):
    """``fn()`` and the accuracy rule's decision on its data, with its numbers apart: the
    first one a second call logs (the first call also logs the metric's numeric checks;
    after the data's decision a search may bind the centred operands again and log their
    bound too, the CPU's kNN does)."""
    fn()
    caplog.clear()
    with caplog.at_level(logging.DEBUG, logger="gbdist.accuracy"):
        out = fn()
    said = [r.getMessage() for r in caplog.records if r.name == "gbdist.accuracy"]
    assert said, "no decision logged"
    num = re.compile(r"\d\.\de[+-]\d+")
    return out, num.sub("#", said[0]), [float(x) for x in num.findall(said[0])]


def _same_decision(caplog, cpu, gpu):
    (a, said_cpu, bounds_cpu), (b, said_gpu, bounds_gpu) = (_decisions(caplog, cpu),
                                                            _decisions(caplog, gpu))
    assert said_gpu == said_cpu
    np.testing.assert_allclose(bounds_gpu, bounds_cpu, rtol=0.1)  # printed to 2 digits
    return a, b


@pytest.mark.parametrize("metric,params", [("sqeuclidean", {}), ("euclidean", {}),
                                           ("minkowski", {"p": 2})],
                         ids=["sqeuclidean", "euclidean", "minkowski2"])
@pytest.mark.parametrize("offset", [1e4, 1e6])
@pytest.mark.parametrize("device_input", [True, False], ids=["cupy", "numpy"])
def test_offset_data_centred_on_the_device(metric, params, offset, device_input, caplog):
    X = _blobs(offset)
    Xin = cupy.asarray(X) if device_input else X
    ref, D = _same_decision(
        caplog, lambda: gb.pairwise_distances(X, metric=metric, backend="cpu", **params),
        lambda: gb.pairwise_distances(Xin, metric=metric, backend="cuda", **params))
    D = cupy.asnumpy(D) if device_input else np.asarray(D)
    R = cdist(X, X, {"minkowski": "euclidean"}.get(metric, metric))
    pos = R > 0
    np.testing.assert_allclose(D[pos], R[pos], rtol=1e-10)
    assert np.all(D[~pos] == 0)
    np.testing.assert_allclose(ref[pos], R[pos], rtol=1e-10)  # the CPU, as its own tests


def test_offset_knn_on_the_device_is_scipys(caplog):
    X = _blobs(1e6, m=300)
    (_, ic), (dg, ig) = _same_decision(
        caplog, lambda: gb.knn(X, k=6, metric="sqeuclidean", backend="cpu"),
        lambda: gb.knn(cupy.asarray(X), k=6, metric="sqeuclidean", backend="cuda"))
    R = cdist(X, X, "sqeuclidean")
    np.fill_diagonal(R, np.inf)
    np.testing.assert_allclose(np.asarray(dg if not hasattr(dg, "get") else dg.get()),
                               np.sort(R, axis=1)[:, :6], rtol=1e-10)


@pytest.mark.parametrize("sep,rtol", [(1e-6, 1e-8), (1e-9, 2e-5)])
def test_haversine_close_pairs_on_the_device(sep, rtol, caplog):
    from sklearn.metrics.pairwise import haversine_distances
    rng = np.random.default_rng(11)
    X = _latlon(4, 80)
    Y = X + sep * rng.normal(size=X.shape)
    want = np.diagonal(haversine_distances(X, Y))
    _, got = _same_decision(
        caplog, lambda: gb.pairwise_distances(X, Y, metric="haversine", backend="cpu"),
        lambda: gb.pairwise_distances(cupy.asarray(X), cupy.asarray(Y), metric="haversine",
                                      backend="cuda"))
    np.testing.assert_allclose(np.diagonal(cupy.asnumpy(got)), want, rtol=rtol, atol=0)


@pytest.mark.parametrize("offset", [1e4, 1e6])
def test_minkowski_3_on_offset_data_is_summed_as_written(offset, caplog):
    X = _blobs(offset)
    _, D = _same_decision(
        caplog, lambda: gb.pairwise_distances(X, metric="minkowski", p=3, backend="cpu"),
        lambda: gb.pairwise_distances(cupy.asarray(X), metric="minkowski", p=3, backend="cuda"))
    R = cdist(X, X, "minkowski", p=3)
    pos = R > 0
    np.testing.assert_allclose(cupy.asnumpy(D)[pos], R[pos], rtol=1e-9)


def test_without_the_direct_pass_the_device_warns(monkeypatch):
    monkeypatch.setattr(codegen, "DIRECT_UNION", False)
    X = _blobs(1e4)
    with pytest.warns(RuntimeWarning, match="cannot sum a union as written"):
        gb.pairwise_distances(cupy.asarray(X), metric="minkowski", p=3, backend="cuda")


def test_statistics_on_the_device_equal_the_hosts():
    """column_stats and row_stats of a CuPy CSR against the same on its host copy."""
    import cupyx.scipy.sparse as cps
    import scipy.sparse as sps
    from gbdist.compiler import accuracy as rule
    from gbdist.pairwise import metric_program
    from gbdist.runtime import accuracy
    X = sps.random(300, 40, density=0.3, random_state=np.random.default_rng(2), format="csr")
    X.data += 1e4
    Xd = cps.csr_matrix(X)
    sd, sh = accuracy.column_stats(Xd), accuracy.column_stats(X)
    np.testing.assert_allclose(cupy.asnumpy(sd), sh, rtol=1e-12)
    for metric, params in (("sqeuclidean", {}), ("minkowski", {"p": 3}), ("canberra", {})):
        for g in rule.guards(metric_program(metric, **params).plan):
            for side in ("left", "right"):
                for u, v in zip(accuracy.row_stats(g, side, Xd, sd),
                                accuracy.row_stats(g, side, X, sh)):
                    np.testing.assert_allclose(cupy.asnumpy(u), v, rtol=1e-9)


def test_device_digest_keys_statistics():
    """The device statistics' cache key (runtime/accuracy._digest, computed on the GPU):
    equal for equal values, different for one changed word or another shape."""
    from gbdist.runtime import accuracy
    rng = np.random.default_rng(3)
    a = cupy.asarray(rng.normal(size=(3, 1001)))
    key = accuracy._digest(a)
    assert key == accuracy._digest(a.copy()) and key.startswith("dev-")
    for j in (0, 500, 1000):
        b = a.copy()
        b[2, j] = cupy.nextafter(b[2, j], cupy.inf)
        assert accuracy._digest(b) != key
    assert accuracy._digest(a.reshape(1, -1)) != key
