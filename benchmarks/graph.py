"""The graph section: gbdist.algorithms and single products against python-graphblas
(SuiteSparse:GraphBLAS), SciPy and networkx, on power-law graphs of 10^4-10^7 edges.

    python benchmarks/run.py graph                         # 1e4, 1e5, 1e6 edges
    python benchmarks/run.py graph --edges 1e7 --only triangle_count,pagerank,mxv
    python benchmarks/run.py graph --device                # gbdist's GPU path as well (CuPy)
    python benchmarks/run.py graph --threads 2 --json out.json
    python benchmarks/run.py graph --kernels               # the CUDA kernels vs cuSPARSE
    python benchmarks/run.py graph --graph road --edges 1e6   # the 1000 x 1000 road-like grid
    python benchmarks/run.py graph --graph rmat --edges 20    # R-MAT scale 20

For every size the graph comes from ``benchmarks/graphs.py``: ``--graph power_law`` (default;
Chung-Lu, undirected, average degree ~17, weights in [1, 2); ``--edges``: stored entries),
``road`` (a side × side grid with 10% of its edges removed; ``--edges``: vertices) or ``rmat``
(Graph500's R-MAT; ``--edges``: the scale). Each row runs gbdist's function, the fastest form
a python-graphblas user would write (``benchmarks/graph_peers.py``: where there are several —
BFS's visited format, triangle counting's ordering and form — each is timed once and the
fastest is the peer, named in the row) and networkx where it is feasible (up to
``--nx-max-edges``); the answers are checked against each other (and SciPy's
csgraph where it has the algorithm) *before* anything is timed. Times are medians of
``--repeat`` runs after one warm-up call (Numba compiles there); "ratio" is gbdist's time over
SuiteSparse's (below 1: gbdist faster); the two are timed interleaved (one of each in
turn), so a change in the load of a shared machine affects both; ``mxv`` is also timed
against SciPy's ``A @ x`` the same way ("vs_scipy"). ``ewise_union`` unites A with a
second graph of the same size; ``ewise_union_vec`` two vectors of the graph's n, each
holding about half of the indices. "peak MiB" is the largest
resident-set growth during one call (sampled every millisecond from /proc/self/statm), for
gbdist and for the peer.

``--kernels`` runs ``benchmarks/graph_gpu.py`` instead: the CUDA SpGEMM and SpMV kernels
(plus_times, min_plus, plus_pair, compensated sums, symmetric SpMV) against cuSPARSE
through cupyx, at ``--edges`` (default 1e5,1e6,1e7). ``--algorithms``: components,
PageRank and triangle counting on the GPU against their bounds (a BFS; steps × one
cuSPARSE SpMV; PageRank also for ``--pagerank-steps`` fixed steps against that many
cuSPARSE SpMVs) and the GraphBLAS methods they replace, at ``--edges`` vertices (default
1e6,1e7; the graph drawn on the device).
"""
from __future__ import annotations

import os
import statistics
import time

import numpy as np
import scipy.sparse as sps
from scipy.sparse import csgraph

import gbdist as gb
from gbdist import algorithms as alg
from gbdist import graph as gr

from benchmarks.graphs import peak_growth, power_law_graph, rmat_graph, road_grid

try:
    from benchmarks import graph_peers as peers
except ImportError as e:  # python-graphblas (the peer) is an optional install
    peers, PEERS_MISSING = None, e

# the CPU columns time the CPU kernels: host products stay on the host even with a GPU here
os.environ.setdefault("GBDIST_GRAPH_AUTO_DEVICE", "0")

NAMES = ("mxm", "mxm_masked", "mxv", "bfs_levels", "bfs_parents", "sssp", "pagerank",
         "triangle_count", "connected_components", "ktruss", "jaccard", "cosine", "ewise_union",
         "ewise_union_vec")


def median_time(fn, repeat: int) -> float:
    fn()  # warm-up: compilation, cached transposes
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def paired_times(ours, peer, repeat: int) -> tuple[float, float]:
    """Medians of ``repeat`` runs of each, interleaved (ours, peer, peer, ours, ...) after
    one warm-up call of each, so that a change in the machine's load (other processes on
    the shared cores) falls on both sides alike."""
    ours(), peer()
    t_o, t_p = [], []
    for r in range(repeat):
        pair = ((ours, t_o), (peer, t_p)) if r % 2 == 0 else ((peer, t_p), (ours, t_o))
        for fn, acc in pair:
            t0 = time.perf_counter()
            fn()
            acc.append(time.perf_counter() - t0)
    return statistics.median(t_o), statistics.median(t_p)


def csr_of(M):
    """SciPy CSR of a gbdist or graphblas matrix, sorted, for comparisons."""
    if isinstance(M, gb.Matrix):
        S = M.to_host().to_scipy() if M.on_device else M.to_scipy()
    else:
        S = peers.grb.io.to_scipy_sparse(M, format="csr")
    S = sps.csr_matrix(S)
    S.sort_indices()
    return S


def same_matrix(a, b, what, rtol=1e-12):
    A, B = csr_of(a), csr_of(b)
    assert A.shape == B.shape and np.array_equal(A.indptr, B.indptr) \
        and np.array_equal(A.indices, B.indices), f"{what}: patterns differ"
    np.testing.assert_allclose(A.data, B.data, rtol=rtol, err_msg=what)


def cases(A, nx_ok: bool, kind: str = "power_law"):
    """name -> (gbdist call, SuiteSparse call, networkx call or None, check(ours, peer))."""
    n = A.shape[0]
    G, P = gb.Matrix(A), peers.to_grb(A)
    x = np.random.default_rng(0).random(n)
    xv, xg = gb.Vector(x), peers.grb.Vector.from_dense(x)
    src = int(np.argmax(np.diff(A.indptr)))  # the biggest hub: BFS reaches the giant part
    if kind == "road":
        src = 0  # a corner: ~2·side levels
    nxg = None
    if nx_ok:
        import networkx as nx
        nxg = nx.from_scipy_sparse_array(A)
    pr = lambda d: np.array([d[i] for i in range(n)])  # noqa: E731
    eq = np.testing.assert_array_equal
    close = lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-15)  # noqa: E731
    S = peers.semiring
    out = {
        "mxm": (lambda: gr.mxm(G, G, gb.semirings.plus_times),
                lambda: P.mxm(P, S.plus_times).new(), None,
                lambda a, b: same_matrix(a, b, "mxm", 1e-9)),
        "mxm_masked": (lambda: gr.mxm(G, G, gb.semirings.plus_pair, mask=G.S),
                       lambda: _masked(P), None, lambda a, b: same_matrix(a, b, "mxm<A>")),
        "mxv": (lambda: gr.mxv(G, xv, gb.semirings.plus_times),
                lambda: P.mxv(xg, S.plus_times).new(), None,
                lambda a, b: close(a.to_dense(), b.to_dense(fill_value=0.0))),
        "bfs_levels": (lambda: alg.bfs_levels(G, src),
                       {f: (lambda f=f: peers.bfs_levels(P, src, f)) for f in ("auto", "bitmap")},
                       nxg and (lambda: nx.single_source_shortest_path_length(nxg, src)), eq),
        "bfs_parents": (lambda: alg.bfs_parents(G, src),
                        {f: (lambda f=f: peers.bfs_parents(P, src, f)) for f in ("auto", "bitmap")},
                        None, eq),
        "sssp": (lambda: alg.sssp(G, src), lambda: peers.sssp(P, src),
                 nxg and (lambda: nx.single_source_bellman_ford_path_length(nxg, src)), close),
        "pagerank": (lambda: alg.pagerank(G), lambda: peers.pagerank(P),
                     nxg and (lambda: nx.pagerank(nxg)),
                     lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-6)),
        "triangle_count": (lambda: alg.triangle_count(G),
                           {f"{o}/{f}": (lambda o=o, f=f: peers.triangle_count(P, o, f))
                            for o, f in peers.TRIANGLE_VARIANTS},
                           nxg and (lambda: sum(nx.triangles(nxg).values()) // 3),
                           lambda a, b: a == b or _fail("triangles", a, b)),
        "connected_components": (lambda: alg.connected_components(G),
                                 lambda: peers.connected_components(P),
                                 nxg and (lambda: list(nx.connected_components(nxg))), eq),
        "ktruss": (lambda: alg.ktruss(G, 4), lambda: peers.ktruss(P, 4),
                   None, lambda a, b: same_matrix(a, b, "ktruss")),
        "jaccard": (lambda: alg.jaccard(G), lambda: peers.jaccard(P), None,
                    lambda a, b: same_matrix(a, b, "jaccard", 1e-12)),
        "cosine": (lambda: alg.cosine(G), lambda: peers.cosine(P), None,
                   lambda a, b: same_matrix(a, b, "cosine", 1e-12)),
        "ewise_union": (lambda: gr.ewise_union(G, _second(A, kind)[0], gb.ops.minus, 1.0, 2.0),
                        lambda: P.ewise_union(_second(A, kind)[1], peers.binary.minus, 1.0,
                                              2.0).new(),
                        None, lambda a, b: same_matrix(a, b, "ewise_union")),
        "ewise_union_vec": (lambda: gr.ewise_union(*_half_vectors(n)[:2], gb.ops.minus, 1.0, 2.0),
                            lambda: _half_vectors(n)[2].ewise_union(
                                _half_vectors(n)[3], peers.binary.minus, 1.0, 2.0).new(),
                            None, lambda a, b: (eq(a.indices, b.to_coo()[0]),
                                                eq(a.values, b.to_coo()[1]))),
    }
    refs = {  # independent answers from SciPy / networkx, checked once
        "bfs_levels": lambda r: eq(r, _levels_scipy(A, src)),
        "sssp": lambda r: close(r, csgraph.dijkstra(A, indices=src)),
        "connected_components": lambda r: eq(r, _components_scipy(A)),
    }
    if nxg is not None:
        refs["pagerank"] = lambda r: np.testing.assert_allclose(r, pr(nx.pagerank(nxg)),
                                                                rtol=1e-6)
        refs["triangle_count"] = lambda r: r == sum(nx.triangles(nxg).values()) // 3 or \
            _fail("triangles vs networkx", r, None)
    return out, refs


_SECOND: dict = {}


def _second(A, kind):
    """eWiseUnion's second operand (gbdist and graphblas forms, built on first use): a
    power-law graph of the same size from another seed, or for the grid and R-MAT A with
    its columns moved by one (a pattern that overlaps A's in part)."""
    if id(A) not in _SECOND:
        n = A.shape[0]
        if kind == "power_law":
            B = power_law_graph(n, avg_degree=17, seed=1)
        else:
            B = A.tocoo()
            B = sps.csr_matrix((2 * B.data, (B.row, (B.col + 1) % n)), shape=A.shape)
        B.sort_indices()
        B.indices, B.indptr = B.indices.astype(A.indices.dtype), B.indptr.astype(A.indptr.dtype)
        _SECOND.clear()
        _SECOND[id(A)] = (A, gb.Matrix(B), peers.to_grb(B))
    return _SECOND[id(A)][1:]


_HALF: dict = {}


def _half_vectors(n):
    """eWiseUnion's vector operands: two vectors of size n, each holding about half of
    the indices (independent draws, seeds 0 and 1; values in [0, 1)), gbdist and graphblas
    forms, built on first use."""
    if n not in _HALF:
        out = []
        for seed in (0, 1):
            rng = np.random.default_rng(seed)
            idx = np.flatnonzero(rng.random(n) < 0.5)
            out.append((idx, rng.random(idx.size)))
        _HALF.clear()
        _HALF[n] = tuple(gb.Vector.from_coo(i, v, size=n) for i, v in out) + \
            tuple(peers.grb.Vector.from_coo(i, v, size=n) for i, v in out)
    return _HALF[n]


def _fail(what, a, b):
    raise AssertionError(f"{what}: {a} != {b}")


def _masked(P):
    C = peers.grb.Matrix(peers.INT64, P.nrows, P.ncols)
    C(P.S) << P.mxm(P, peers.semiring.plus_pair)
    return C


def _levels_scipy(A, s):
    d = csgraph.shortest_path(A, unweighted=True, indices=s)
    return np.where(np.isinf(d), -1, d).astype(np.int64)


def _components_scipy(A):
    k, lab = csgraph.connected_components(A, directed=False)
    first = np.full(k, A.shape[0], dtype=np.int64)
    np.minimum.at(first, lab, np.arange(A.shape[0]))
    return first[lab]


def make_graph(kind: str, size: float):
    """(adjacency, description) of the benchmark graph ``kind`` at ``size``."""
    if kind == "road":
        side = max(4, int(round(size ** 0.5)))
        return road_grid(side, seed=0), f"road-like {side} x {side} grid, 10% of edges removed"
    if kind == "rmat":
        return rmat_graph(int(size), seed=0), f"R-MAT scale {int(size)}"
    n = max(16, int(size / 17))
    return power_law_graph(n, avg_degree=17, seed=0), "undirected power law"


def pick_peer(peer):
    """The peer call: itself, or of several variants the fastest (one warm-up and one timed
    run each) and its name."""
    if not isinstance(peer, dict):
        return peer, None
    best = None
    for name, fn in peer.items():
        fn()
        t0 = time.perf_counter()
        fn()
        t = time.perf_counter() - t0
        if best is None or t < best[0]:
            best = (t, name, fn)
    return best[2], best[1]


def run_size(edges: float, args) -> list[dict]:
    A, what = make_graph(args.graph, edges)
    n = A.shape[0]
    A.indices, A.indptr = A.indices.astype(np.int64), A.indptr.astype(np.int64)
    print(f"\n## {A.nnz:.2e} stored entries (n = {n}, {what})", flush=True)
    print(f"{'operation':22s} {'gbdist s':>10s} {'SuiteSparse s':>13s} {'ratio':>7s} "
          f"{'networkx s':>10s} {'peak MiB':>9s} {'peer MiB':>9s}"
          + (f"  {'gpu s':>8s}" if args.device else ""))
    calls, refs = cases(A, A.nnz <= args.nx_max_edges, args.graph)
    rows = []
    for name in NAMES:
        if args.only and name not in args.only:
            continue
        if name == "mxm" and A.nnz > args.mxm_max_edges:
            continue  # A·A of a power-law graph: the output alone is far larger than A
        ours, peer, nxf, check = calls[name]
        variants = list(peer) if isinstance(peer, dict) else None
        r_ours = ours()
        for fn in (peer.values() if variants else (peer,)):
            check(r_ours, fn())  # results checked before timing (every peer variant)
        if name in refs:
            refs[name](r_ours)
        peer, variant = pick_peer(peer)
        t_ours, t_peer = paired_times(ours, peer, args.repeat)
        extra = {} if variant is None else {"peer_variant": variant}
        if name == "mxv":  # the SpMV target is against SciPy's A @ x
            x = np.random.default_rng(0).random(n)
            t_o2, t_sp = paired_times(ours, lambda: A @ x, args.repeat)
            extra = dict(scipy_s=t_sp, vs_scipy=t_o2 / t_sp)
        t_nx = median_time(nxf, 1) if nxf else None
        peak = peak_growth(ours) / 2**20
        peer_peak = peak_growth(peer) / 2**20
        row = dict(graph=args.graph, edges=int(A.nnz), n=n, op=name, gbdist_s=t_ours,
                   suitesparse_s=t_peer, ratio=t_ours / t_peer, networkx_s=t_nx,
                   peak_mib=peak, peer_peak_mib=peer_peak, **extra)
        if args.device:
            row["gpu_s"] = _gpu_time(name, A, args, r_ours)
        rows.append(row)
        print(f"{name:22s} {t_ours:10.4f} {t_peer:13.4f} {row['ratio']:7.2f} "
              f"{(f'{t_nx:10.3f}' if t_nx else '         -')} {peak:9.1f} {peer_peak:9.1f}"
              + (f"  {row['gpu_s']:8.4f}" if args.device else "")
              + (f"  (peer: {variant})" if variant else "")
              + (f"  (SciPy A @ x {extra['scipy_s']:.4f} s, ratio {extra['vs_scipy']:.2f})"
                 if "scipy_s" in extra else ""), flush=True)
    return rows


def _host_form(r):
    """A result in a comparable host form: dense values (and the pattern of a Matrix)."""
    if isinstance(r, gb.Matrix):
        c = r.to_host().to_scipy()
        c.sort_indices()
        return ("matrix", c.indptr, c.indices, np.asarray(c.data, dtype=np.float64))
    if isinstance(r, gb.Vector):
        v = r.to_host() if getattr(r, "on_device", False) else r
        return ("vector", np.asarray(v.indices), np.asarray(v.values, dtype=np.float64))
    if hasattr(r, "get"):
        r = r.get()
    return ("array", np.asarray(r, dtype=np.float64))


def _check_gpu(name, got, want):
    """The device answer against the host one: exact structure, values to 1e-6 (float sums
    in another order)."""
    g, w = _host_form(got), _host_form(want)
    assert g[0] == w[0], f"{name}: device result kind {g[0]} != host {w[0]}"
    for a, b in zip(g[1:-1], w[1:-1]):
        np.testing.assert_array_equal(a, b, err_msg=f"{name}: device pattern differs")
    np.testing.assert_allclose(g[-1], w[-1], rtol=1e-6, atol=1e-12,
                               err_msg=f"{name}: device values differ")


def _gpu_time(name, A, args, host_result):
    """gbdist on the device (the matrix moved once, outside the timing), checked against the
    host answer before timing; each timed call synchronises the device."""
    import cupy as cp
    Gd = gb.Matrix(A).to_device()
    n = A.shape[0]
    src = 0 if args.graph == "road" else int(np.argmax(np.diff(A.indptr)))
    xv = gb.Vector(cp.asarray(np.random.default_rng(0).random(n)))
    f = {"mxm": lambda: gr.mxm(Gd, Gd, gb.semirings.plus_times),
         "mxm_masked": lambda: gr.mxm(Gd, Gd, gb.semirings.plus_pair, mask=Gd.S),
         "mxv": lambda: gr.mxv(Gd, xv, gb.semirings.plus_times),
         "bfs_levels": lambda: alg.bfs_levels(Gd, src),
         "bfs_parents": lambda: alg.bfs_parents(Gd, src),
         "sssp": lambda: alg.sssp(Gd, src), "pagerank": lambda: alg.pagerank(Gd),
         "triangle_count": lambda: alg.triangle_count(Gd),
         "connected_components": lambda: alg.connected_components(Gd),
         "ktruss": lambda: alg.ktruss(Gd, 4), "jaccard": lambda: alg.jaccard(Gd),
         "cosine": lambda: alg.cosine(Gd)}[name]

    def synced():
        r = f()
        cp.cuda.Device().synchronize()
        return r
    _check_gpu(name, synced(), host_result)  # checked before timing
    return median_time(synced, args.repeat)


def add_arguments(p) -> None:
    p.add_argument("--edges", default=None,
                   help="comma-separated sizes (default 1e4,1e5,1e6; --kernels: 1e5,1e6,1e7): "
                        "stored entries (power_law), vertices (road), the scale (rmat)")
    p.add_argument("--graph", default="power_law", choices=("power_law", "road", "rmat"),
                   help="the benchmark graph (benchmarks/graphs.py)")
    p.add_argument("--repeat", type=int, default=None,
                   help="timed runs per median (default 3; --kernels: 10)")
    p.add_argument("--only", default="", help="comma-separated operation names: " + ", ".join(NAMES))
    p.add_argument("--nx-max-edges", type=float, default=2e5)
    p.add_argument("--mxm-max-edges", type=float, default=2e6)
    p.add_argument("--device", action="store_true", help="also time gbdist's GPU path")
    p.add_argument("--threads", type=int, default=0,
                   help="threads for both gbdist and SuiteSparse (default: each its own)")
    p.add_argument("--kernels", action="store_true",
                   help="the CUDA SpGEMM/SpMV kernels against cuSPARSE (benchmarks/graph_gpu.py)")
    p.add_argument("--algorithms", action="store_true",
                   help="components, PageRank and triangles on the GPU against their bounds "
                        "(benchmarks/graph_gpu.py; --edges: vertices, default 1e6,1e7)")
    p.add_argument("--pagerank-steps", type=int, default=20,
                   help="--algorithms: PageRank's fixed step count timed against that many "
                        "cuSPARSE SpMVs (default 20)")


def run(args) -> dict:
    if args.kernels:
        from benchmarks import graph_gpu
        return graph_gpu.kernels(args.edges or "1e5,1e6,1e7", args.repeat or 10)
    if args.algorithms:
        from benchmarks import graph_gpu
        return graph_gpu.algorithms(args.edges or "1e6,1e7", args.repeat or 5,
                                    getattr(args, "pagerank_steps", 20))
    if peers is None:
        raise SystemExit(f"graph: the peers need python-graphblas ({PEERS_MISSING})")
    args.edges = args.edges or "1e4,1e5,1e6"
    args.repeat = args.repeat or 3
    if args.threads:
        os.environ["GBDIST_NUM_THREADS"] = str(args.threads)
        peers.grb.ss.config["nthreads"] = args.threads
    args.only = set(filter(None, args.only.split(",")))
    unknown = args.only - set(NAMES)
    if unknown:
        raise SystemExit(f"graph: unknown operations {sorted(unknown)}; choose from {', '.join(NAMES)}")
    print(f"CPU cores: {os.cpu_count()}; SuiteSparse threads: "
          f"{peers.grb.ss.config['nthreads']}; gbdist graph kernels: "
          f"{type(gr.get_kernels('auto')).__name__}, threads "
          f"{os.environ.get('GBDIST_NUM_THREADS', 'all')}; load average "
          f"{os.getloadavg()[0]:.1f}")
    rows = []
    for e in args.edges.split(","):
        rows += run_size(float(e), args)
    return {"rows": rows}
