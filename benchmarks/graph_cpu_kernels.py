"""The compiled CPU graph kernels against SciPy and python-graphblas (SuiteSparse).

On random power-law graphs (``benchmarks/graphs.py``, average degree ~17):

* plus_times ``spmv`` (dense x) against SciPy's ``A @ x`` (target: within 1.2x);
* min_plus ``spmv`` against SuiteSparse's ``A.mxv(x, min_plus)``;
* plus_times and plus_pair SpGEMM ``A @ A`` against SuiteSparse (and SciPy);
* min_plus ``vxm`` of a vector holding 2-70% of the vertices, by push (``spmspv``)
  against pull (``spmv`` of Aᵀ), the measurement behind ``PUSH_EDGE_SHARE``;
* masked SpGEMM ``C<L> = L ⊕.⊗ L.T`` with plus_pair (triangle counting) against
  SuiteSparse (target for SuiteSparse comparisons: within 1.5x).

Every result is checked against the peer's before anything is timed. Times are medians
of ``--repeat`` runs, gbdist and the peer alternately, after one warm-up call each
(which compiles or loads the kernels); the
ratio column is gbdist's time over the peer's (below 1: gbdist faster); the peak column is
the largest resident-set growth seen during one gbdist call (sampled every millisecond).

    python benchmarks/graph_cpu_kernels.py                 # 10^4, 3·10^4, 10^5, 10^6 vertices
    python benchmarks/graph_cpu_kernels.py --sizes 100000 --aa-max 0
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sps

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.graphs import peak_growth, power_law_graph  # noqa: E402




def median_times(ours, peer, repeat: int) -> tuple:
    """Median seconds of ``ours`` and ``peer``, timed alternately (one warm-up call each),
    so that load from other processes on the shared cores falls on both alike."""
    ours()
    peer()
    a, b = [], []
    for _ in range(repeat):
        t0 = time.perf_counter()
        ours()
        a.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        peer()
        b.append(time.perf_counter() - t0)
    return statistics.median(a), statistics.median(b)


def same_csr(C, D, what: str) -> None:
    C, D = sps.csr_matrix(C), sps.csr_matrix(D)
    C.sort_indices()
    D.sort_indices()
    if C.shape != D.shape or C.nnz != D.nnz or not np.array_equal(C.indptr, D.indptr) \
            or not np.array_equal(C.indices, D.indices) \
            or not np.allclose(C.data, D.data, rtol=1e-9, atol=0):
        raise AssertionError(f"{what}: results differ (nnz {C.nnz} vs {D.nnz})")


def to_grb(A):
    import graphblas as grb
    return grb.io.from_scipy_sparse(A)


def grb_csr(M) -> sps.csr_matrix:
    import graphblas as grb
    return grb.io.to_scipy_sparse(M, format="csr")


def rows(n: int, repeat: int, skip_aa: bool):
    """Every row of the table for one graph size (``skip_aa``: no unmasked A @ A, whose
    output grows as Σ deg² — 15.5M entries at 10^4 vertices, ~10^10 at 10^6)."""
    import graphblas as grb
    from gbdist.algebra.semirings import semirings as S
    from gbdist.backends.compiled.graph import CompiledGraphKernels

    K = CompiledGraphKernels()
    t0 = time.perf_counter()
    A = power_law_graph(n, seed=1)
    gen = time.perf_counter() - t0
    print(f"# n = {n}: {A.nnz} stored entries, max degree {np.diff(A.indptr).max()} "
          f"(generated in {gen:.1f} s)", flush=True)
    Ag = to_grb(A)
    x = np.random.default_rng(2).random(n)
    xg = grb.Vector.from_dense(x)
    out = []

    def row(name, ours, peer, peer_name):
        tg, tp = median_times(ours, peer, repeat)
        mem = peak_growth(ours)
        out.append((n, A.nnz, name, peer_name, tg, tp, tg / tp, mem))
        print(f"{n:>8} {name:<28} {peer_name:<12} {tg * 1e3:10.2f} ms {tp * 1e3:10.2f} ms "
              f"{tg / tp:6.2f}x {mem / 2 ** 20:8.1f} MiB", flush=True)

    # plus_times mxv against SciPy
    y, _ = K.spmv(A, x, None, S.plus_times, out_dtype=np.float64)
    assert np.allclose(y, A @ x, rtol=1e-12)
    row("plus_times mxv", lambda: K.spmv(A, x, None, S.plus_times, out_dtype=np.float64),
        lambda: A @ x, "scipy")
    # min_plus mxv against SuiteSparse
    y, yp = K.spmv(A, x, None, S.min_plus, out_dtype=np.float64)
    ref = Ag.mxv(xg, grb.semiring.min_plus).new()
    ri, rv = ref.to_coo()
    assert np.array_equal(np.flatnonzero(yp), ri) and np.allclose(y[ri], rv)
    row("min_plus mxv", lambda: K.spmv(A, x, None, S.min_plus, out_dtype=np.float64),
        lambda: Ag.mxv(xg, grb.semiring.min_plus).new(), "suitesparse")
    if not skip_aa:
        for name, gsr in (("plus_times", grb.semiring.plus_times),
                          ("plus_pair", grb.semiring.plus_pair)):
            C = K.spgemm(A, A, S[name], out_dtype=np.float64)
            same_csr(C, grb_csr(Ag.mxm(Ag, gsr).new()), f"{name} A @ A")
            row(f"{name} spgemm A@A", lambda s=S[name]: K.spgemm(A, A, s, out_dtype=np.float64),
                lambda g=gsr: Ag.mxm(Ag, g).new(), "suitesparse")
            if name == "plus_times":
                row("plus_times spgemm A@A", lambda: K.spgemm(A, A, S.plus_times,
                                                             out_dtype=np.float64),
                    lambda: A @ A, "scipy")
    # vxm by push (SpMSpV over the vector's rows) against pull (SpMV of Aᵀ with x's
    # presence) for vectors of a share of the vertices: the rule of
    # gbdist.graph.operations.PUSH_EDGE_SHARE (the "peer" column is the pull)
    AT = A.T.tocsr()
    AT.sort_indices()
    AT.indices, AT.indptr = AT.indices.astype(A.indices.dtype), AT.indptr.astype(A.indptr.dtype)
    rng = np.random.default_rng(3)
    for share in (0.02, 0.1, 0.4, 0.7):
        idx = np.sort(rng.choice(n, max(1, int(share * n)), replace=False))
        val = rng.random(idx.size)
        xd = np.zeros(n)
        xd[idx] = val
        xpres = np.zeros(n, dtype=bool)
        xpres[idx] = True
        push = lambda: K.spmspv(A, idx, val, S.min_plus, out_dtype=np.float64)  # noqa: E731
        pull = lambda: K.spmv(AT, xd, xpres, S.min_plus, out_dtype=np.float64)  # noqa: E731
        (y1, p1), (y2, p2) = push(), pull()
        assert np.array_equal(p1, p2) and np.allclose(y1[p1], y2[p2], rtol=1e-12)
        row(f"min_plus vxm push, {share:.0%} of u", push, pull, "pull")
    # triangle counting: C<L> = L plus_pair L.T
    L = sps.tril(A, k=-1).tocsr()
    L.sort_indices()
    L.indices, L.indptr = L.indices.astype(A.indices.dtype), L.indptr.astype(A.indptr.dtype)
    LT = L.T.tocsr()
    LT.sort_indices()
    Lg = to_grb(L)
    C = K.spgemm(L, LT, S.plus_pair, mask=L, out_dtype=np.int64)
    G = Lg.mxm(Lg.T, grb.semiring.plus_pair).new(mask=Lg.S)
    same_csr(C, grb_csr(G), "masked L plus_pair L.T")
    print(f"#   triangles: {int(C.sum())}", flush=True)
    row("plus_pair <L> L@L.T", lambda: K.spgemm(L, LT, S.plus_pair, mask=L, out_dtype=np.int64),
        lambda: Lg.mxm(Lg.T, grb.semiring.plus_pair).new(mask=Lg.S), "suitesparse")
    return out


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[10 ** 4, 3 * 10 ** 4, 10 ** 5, 10 ** 6])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--aa-max", type=int, default=30_000,
                    help="unmasked A @ A only on graphs up to this many vertices")
    args = ap.parse_args(argv)
    import graphblas as grb
    from gbdist.backends.compiled.threads import threads
    print(f"# threads: gbdist {threads()}, SuiteSparse {grb.ss.config['nthreads']}; "
          "2 shared cores (other processes may run)")
    print(f"{'n':>8} {'operation':<28} {'peer':<12} {'gbdist':>13} {'peer':>13} "
          f"{'ratio':>7} {'peak':>12}")
    for n in args.sizes:
        rows(n, args.repeat, n > args.aa_max)


if __name__ == "__main__":
    main()
