"""backend="auto" on host data: products big enough for the GPU to win run there (operands
moved once and kept on the host objects, results brought back), with the host results."""
from __future__ import annotations

import numpy as np
import pytest

import gbdist as gb
from gbdist import graph as gr
from gbdist.graph import dispatch
from graphcase import random_graph, random_vector

SR = gb.semirings


def test_no_device_means_host(monkeypatch):
    from gbdist.backends.cuda import available
    if available():
        pytest.skip("a CUDA device is present")
    monkeypatch.setattr(dispatch, "DEVICE_FROM", dict.fromkeys(dispatch.DEVICE_FROM, 0))
    A = gb.Matrix(random_graph(np.random.default_rng(1), 60, p=0.1)[0])
    C = gr.mxm(A, A, SR.plus_times)
    assert not C.on_device and not A.has_prepared("device-mirror")
    assert not dispatch.device_pays("mxv", 10**9)


def test_turned_off_by_the_environment(monkeypatch):
    monkeypatch.setenv("GBDIST_GRAPH_AUTO_DEVICE", "0")
    assert not dispatch.device_pays("mxm", 10**12)
    assert not dispatch.device_pays("mxv", 10)  # below the threshold anyway


@pytest.mark.gpu
@pytest.mark.parametrize("masked", [False, True])
def test_big_host_products_run_on_the_device(monkeypatch, masked):
    from gbdist.backends.cuda import available
    if not available():
        pytest.skip("needs a CUDA device")
    monkeypatch.setattr(dispatch, "DEVICE_FROM", dict.fromkeys(dispatch.DEVICE_FROM, 0))
    monkeypatch.delenv("GBDIST_GRAPH_AUTO_DEVICE", raising=False)
    rng = np.random.default_rng(3)
    A = gb.Matrix(random_graph(rng, 400, p=0.03)[0])
    u = random_vector(rng, 400, 0.7)[0]
    M = gb.Matrix(random_graph(rng, 400, p=0.2)[0])
    mask = M.S if masked else None
    C = gr.mxm(A, A, SR.min_plus, mask=mask)
    assert not C.on_device and A.has_prepared("device-mirror")
    assert C.isequal(gr.mxm(A, A, SR.min_plus, mask=mask, backend="cpu"))
    assert C.decision is not None
    mirror = A.prepared("device-mirror", lambda: None)
    w = gr.mxv(A, u, SR.plus_times, compensated=True)
    assert not w.on_device and A.prepared("device-mirror", lambda: None) is mirror  # moved once
    np.testing.assert_allclose(w.to_dense(), gr.mxv(A, u, SR.plus_times, backend="cpu").to_dense(), rtol=1e-12)
    v = gr.vxm(u, A, SR.max_times)
    assert v.isequal(gr.vxm(u, A, SR.max_times, backend="cpu"))
    gr.assign(A, 7.0, [0], [1])  # an in-place change: the mirror is rebuilt
    assert not A.has_prepared("device-mirror")
    C2 = gr.mxm(A, A, SR.plus_times)
    assert C2.isequal(gr.mxm(A, A, SR.plus_times, backend="cpu"))
