"""GPU self-check of the peers in ``benchmarks/peers.py`` (run on the GPU machine).

    python benchmarks/check_peers.py [--data-dir .bench_data]

Compares every peer and metric it supports with a float64 CPU reference on
fresh random sparse inputs (an empty row included, outputs poisoned with NaN
where the peer takes an ``out``), checks the naive kernel's grid-stride path
(more than 65535 * 8 query rows), compares naive_merge with scikit-learn on
slices of the prepared real datasets when ``--data-dir`` holds them, and times
a few peers with :func:`peers.timeit_cuda`.  Exits non-zero on any failure.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from scipy.spatial.distance import cdist
from scipy.special import rel_entr

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks import datasets, peers  # noqa: E402


def reference(metric, Q, X):
    """Float64 CPU reference distances for dense or sparse ``Q`` and ``X``."""
    a = np.asarray(Q.toarray() if sp.issparse(Q) else Q, dtype=np.float64)
    b = np.asarray(X.toarray() if sp.issparse(X) else X, dtype=np.float64)
    if metric == "jensenshannon":
        out = np.empty((a.shape[0], b.shape[0]))
        for i in range(a.shape[0]):
            m = 0.5 * (a[i] + b)
            out[i] = np.sqrt(0.5 * (rel_entr(a[i], m) + rel_entr(b, m)).sum(axis=1))
        return out
    if metric == "inner_product":
        return a @ b.T
    if metric == "cosine":
        na = np.linalg.norm(a, axis=1)
        nb = np.linalg.norm(b, axis=1)
        na[na == 0] = 1.0
        nb[nb == 0] = 1.0
        return np.clip(1.0 - (a @ b.T) / np.outer(na, nb), 0.0, 2.0)
    name = {"manhattan": "cityblock"}.get(metric, metric)
    return cdist(a, b, name)


def to_numpy(result):
    """CuPy array, torch tensor or NumPy array -> NumPy float64."""
    if hasattr(result, "get"):
        result = result.get()
    elif hasattr(result, "detach"):
        result = result.detach().cpu().numpy()
    return np.asarray(result, dtype=np.float64)


def rel_err(out, ref):
    """||out - ref|| / ||ref|| (inf when out holds a NaN)."""
    if np.isnan(out).any():
        return float("inf")
    return float(np.linalg.norm(out - ref) / max(np.linalg.norm(ref), 1e-30))


def random_pair(seed, n_cols=300, signed=False):
    """Random CSR query/data matrices with one empty query row."""
    rng = np.random.default_rng(seed)
    q = sp.random(50, n_cols, density=0.06, format="lil", random_state=rng, dtype=np.float32)
    x = sp.random(70, n_cols, density=0.12, format="csr", random_state=rng, dtype=np.float32)
    q[7, :] = 0
    q = q.tocsr()
    if signed:
        q.data -= 0.5
        x.data -= 0.5
    return datasets.canonical_csr(q), datasets.canonical_csr(x)


PEER_METRICS = {
    "sklearn_cpu": peers.SKLEARN_METRICS,
    "cusparse": peers.CUSPARSE_METRICS,
    "torch_cdist": tuple(peers.TORCH_METRICS),
    "naive_merge": tuple(peers.NAIVE_METRICS),
}
# Norm expansion (cusparse, torch's mm path) loses digits to cancellation.
TOLERANCE = {"sklearn_cpu": 1e-5, "cusparse": 1e-4, "torch_cdist": 1e-4, "naive_merge": 1e-5}


def check_random(failures, rows):
    """All peers x metrics on three fresh random input pairs."""
    import cupy as cp

    for seed in (11, 12, 13):
        signed = seed == 13
        q, x = random_pair(seed, signed=signed)
        for peer_name, metrics in PEER_METRICS.items():
            for metric in metrics:
                if signed and metric == "jensenshannon":
                    continue
                ref = reference(metric, q, x)
                if peer_name == "naive_merge":
                    out = cp.full((q.shape[0], x.shape[0]), cp.nan, dtype=cp.float32)
                    res = peers.naive_merge(q, x, metric, out=out)
                else:
                    res = peers.PEERS[peer_name](q, x, metric)
                err = rel_err(to_numpy(res), ref)
                ok = err < TOLERANCE[peer_name]
                rows.append((f"random seed {seed}", peer_name, metric, err, ok))
                if not ok:
                    failures.append((peer_name, metric, seed, err))
        # GPU-resident inputs pass through too.
        qg, xg = peers.to_gpu_csr(q), peers.to_gpu_csr(x)
        for peer_name in ("cusparse", "naive_merge"):
            res = peers.PEERS[peer_name](qg, xg, "cosine")
            err = rel_err(to_numpy(res), reference("cosine", q, x))
            rows.append((f"gpu inputs {seed}", peer_name, "cosine", err, err < 1e-4))
            if err >= 1e-4:
                failures.append((peer_name, "cosine gpu inputs", seed, err))


def check_grid_stride(failures, rows):
    """More query rows than one grid covers in y (65535 * 8)."""
    rng = np.random.default_rng(21)
    q = datasets.canonical_csr(sp.random(600_000, 40, density=0.1, format="csr", random_state=rng, dtype=np.float32))
    x = datasets.canonical_csr(sp.random(3, 40, density=0.5, format="csr", random_state=rng, dtype=np.float32))
    err = rel_err(to_numpy(peers.naive_merge(q, x, "manhattan")), reference("manhattan", q, x))
    rows.append(("600000 x 3", "naive_merge", "manhattan", err, err < 1e-5))
    if err >= 1e-5:
        failures.append(("naive_merge", "grid stride", 0, err))


def check_real(failures, rows, timings, data_dir):
    """naive_merge vs scikit-learn on slices of each prepared dataset; some timings."""
    for name in datasets.REAL_NAMES:
        m, _ = datasets.load(name, data_dir)
        q = m[:128]
        x = m[: min(m.shape[0], 4096)]
        for metric in ("cosine", "manhattan"):
            ref = peers.sklearn_cpu(q.astype(np.float64), x.astype(np.float64), metric)
            err = rel_err(to_numpy(peers.naive_merge(q, x, metric)), np.asarray(ref))
            ok = err < 1e-5
            rows.append((name, "naive_merge", metric, err, ok))
            if not ok:
                failures.append(("naive_merge", f"{name} {metric}", 0, err))
        if m.shape[0] <= 5000:
            qg = peers.to_gpu_csr(m)
            timings.append((name, "naive_merge cosine", peers.timeit_cuda(lambda: peers.naive_merge(qg, qg, "cosine"), 5, 2)))
            timings.append((name, "cusparse cosine", peers.timeit_cuda(lambda: peers.cusparse(qg, qg, "cosine"), 5, 2)))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", default=".bench_data")
    args = parser.parse_args(argv)

    failures, rows, timings = [], [], []
    check_random(failures, rows)
    check_grid_stride(failures, rows)
    if Path(args.data_dir).is_dir():
        check_real(failures, rows, timings, args.data_dir)
    else:
        print(f"no {args.data_dir}: real-data checks skipped")

    for where, peer, metric, err, ok in rows:
        print(f"{where:18s} {peer:12s} {metric:14s} rel err {err:9.2e} {'ok' if ok else 'FAIL'}")
    for name, what, ms in timings:
        print(f"time {name:13s} {what:20s} {ms:9.3f} ms")
    print(f"{len(rows)} checks, {len(failures)} failures")
    for f in failures:
        print("FAIL", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
