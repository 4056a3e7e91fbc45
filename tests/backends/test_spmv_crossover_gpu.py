"""The CPU-vs-GPU SpMV crossover of benchmarks/graph_symmetric_gpu.py on tiny sizes: host
(NumPy) stencil parts reach cupyx (the constructor takes CuPy arrays only), and every
product the crossover times agrees with SciPy (it asserts so before timing)."""
import numpy as np
import pytest

pytestmark = pytest.mark.gpu


def test_as_cupyx_takes_host_parts():
    from benchmarks import stencils as st
    parts = st.poisson3d(5)
    D = st.as_cupyx(parts)
    H = st.as_scipy(parts)
    x = np.random.default_rng(0).random(H.shape[0])
    import cupy
    np.testing.assert_allclose((D @ cupy.asarray(x)).get(), H @ x, rtol=1e-13)


def test_crossover_runs_on_stencils_and_power_law_graphs():
    from benchmarks.graph_symmetric_gpu import crossover
    rows = crossover([4], [1000], 2)
    assert [r["matrix"].split()[0] for r in rows] == ["poisson7", "powerlaw"]
    for r in rows:
        for k in ("cpu_compiled_ms", "cpu_scipy_ms", "gpu_gbdist_ms", "gpu_cusparse_ms",
                  "gr_mxv_cpu_ms", "gr_mxv_gpu_ms"):
            assert r[k] > 0
    assert "gpu_sym_hostx_ms" in rows[0]
