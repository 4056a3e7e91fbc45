"""The power law's unmasked mxm (``gr.mxm(G, G, plus_times)`` against python-graphblas'
``P.mxm(P, plus_times).new()``, benchmarks/graph.py's ``mxm`` row) with ONE library per
process, so that the two products are never held at once (issue 28, helper hE1).

    python benchmarks/results/cpu2-2026-11-27k-hE1-mxm.py gbdist|peer THREADS [--edges 1.7e6]
        [--repeat 3] [--dump DIR]

The graph is benchmarks/graphs.py's power law as the runner builds it (``make_graph``,
indices cast to int64 as ``run_size`` does; kept in GRAPH_DIR as .npz after its first
build). The side's kernels are loaded on a small power law first (17,000 entries), then its
operand is made and one first call is measured: peak resident-set growth by the kernel's
high-water mark (``VmHWM`` after resetting it through /proc/self/clear_refs, exact) and by
``benchmarks.graphs.peak_growth`` (the docs' 1 ms sampler); then ``--repeat`` timed calls,
each after the previous answer is dropped (one answer held at a time). Threads: gbdist's
GBDIST_NUM_THREADS and SuiteSparse's ``nthreads`` both THREADS (as the runner's
``--threads``). glibc's mmap threshold is fixed at 128 KiB (the process re-executes itself
with MALLOC_MMAP_THRESHOLD_=131072 when it is not set), so every buffer over 128 KiB is fresh
pages and counted.

The answer's digest (one JSON line with the timings): nnz, SHA-256 of the per-row counts,
of the column indices in CSR order (sorted rows: the same as the sorted (row, col) pairs),
of the values' exact bits, and of the values rounded to 30 significant bits (~1e-9
relative), plus the values' sum and the per-row sums' SHA-256 at 1e-9. ``--dump DIR``
writes the values as DIR/SIDE-values.npy (for an elementwise comparison of two processes).
"""
import gc
import hashlib
import json
import os
import re
import sys
import time
from pathlib import Path

if __name__ == "__main__" and os.environ.get("MALLOC_MMAP_THRESHOLD_") != "131072":
    os.environ["MALLOC_MMAP_THRESHOLD_"] = "131072"
    os.execv(sys.executable, [sys.executable] + sys.argv)

SIDE, T = sys.argv[1], int(sys.argv[2])
assert SIDE in ("gbdist", "peer")
os.environ["GBDIST_NUM_THREADS"] = str(T)
os.environ.setdefault("GBDIST_GRAPH_AUTO_DEVICE", "0")
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import numpy as np  # noqa: E402
import scipy.sparse as sps  # noqa: E402

import gbdist as gb  # noqa: E402
from gbdist import graph as gr  # noqa: E402

from benchmarks import graph as bg  # noqa: E402
from benchmarks import graph_peers as peers  # noqa: E402
from benchmarks.graphs import peak_growth  # noqa: E402


def _arg(name, default):
    return type(default)(sys.argv[sys.argv.index(name) + 1]) if name in sys.argv else default


def graph(size):
    d = os.environ.get("GRAPH_DIR")
    f = d and Path(d) / f"power_law-{size:g}.npz"
    if f and f.exists():
        A = sps.load_npz(f).tocsr()
    else:
        A, _ = bg.make_graph("power_law", size)
        if f:
            sps.save_npz(f, A, compressed=False)
    A.indices, A.indptr = A.indices.astype(np.int64), A.indptr.astype(np.int64)
    return A


def call(A):
    if SIDE == "gbdist":
        G = gb.Matrix(A)
        return lambda: gr.mxm(G, G, gb.semirings.plus_times)
    P = peers.to_grb(A)
    return lambda: P.mxm(P, peers.semiring.plus_times).new()


def hwm() -> int:
    with open("/proc/self/status") as f:
        return int(re.search(r"VmHWM:\s+(\d+)", f.read()).group(1)) * 1024


def rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def first_call(fn):
    """(answer, seconds, HWM growth, sampled growth): the high-water mark reset just before."""
    out = {}

    def run():
        gc.collect()
        base = rss()
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")  # VmHWM := the current RSS
        t0 = time.perf_counter()
        out["r"] = fn()
        out["s"] = time.perf_counter() - t0
        out["hwm"] = hwm() - base
    sampled = peak_growth(run)
    return out["r"], out["s"], out["hwm"], sampled


def csr(r):
    """The answer's indptr, indices and values without a copy of the whole (gbdist: the
    matrix's own arrays; SuiteSparse: unpacked, its columns sorted)."""
    if SIDE == "gbdist":
        S = r.to_scipy()
        assert S.has_sorted_indices
        return S.indptr, S.indices, S.data
    d = r.ss.unpack("csr", sort=True)
    assert d["sorted_cols"] and not d["is_iso"]
    return d["indptr"], d["col_indices"], d["values"]


def _round(v):
    m, e = np.frexp(v)
    return np.ldexp(np.round(m * 2.0**30), e - 30)


def digest(r):
    ip, ix, vx = csr(r)
    ip = ip.astype(np.int64)
    counts = np.diff(ip)
    h_cols, h_bits, h_round = hashlib.sha256(), hashlib.sha256(), hashlib.sha256()
    step = 1 << 23
    for s in range(0, vx.size, step):
        h_cols.update(ix[s:s + step].astype(np.int64).tobytes())
        h_bits.update(vx[s:s + step].tobytes())
        h_round.update(_round(vx[s:s + step]).tobytes())
    rows = np.add.reduceat(vx, ip[:-1][counts > 0]) if vx.size else vx
    d = dict(nnz=int(ip[-1]), rows_sha=hashlib.sha256(counts.tobytes()).hexdigest()[:16],
             cols_sha=h_cols.hexdigest()[:16], values_bits_sha=h_bits.hexdigest()[:16],
             values_1e9_sha=h_round.hexdigest()[:16], values_sum=float(vx.sum()), index_type=str(ix.dtype),
             row_sums_1e9_sha=hashlib.sha256(_round(rows).tobytes()).hexdigest()[:16])
    dump = _arg("--dump", "")
    if dump:
        np.save(Path(dump) / f"{SIDE}-values.npy", vx)
        np.save(Path(dump) / f"{SIDE}-rows.npy", counts)
    return d


def main():
    size, repeat = _arg("--edges", 1.7e6), _arg("--repeat", 3)
    peers.grb.ss.config["nthreads"] = T
    load0 = os.getloadavg()
    call(graph(17_000))()  # kernels compiled / loaded on a small graph of the same kind
    A = graph(size)
    fn = call(A)
    r, first_s, grow_hwm, grow_sampled = first_call(fn)
    d = digest(r)
    r = None
    times = []
    for _ in range(repeat):
        gc.collect()
        t0 = time.perf_counter()
        r = fn()
        times.append(time.perf_counter() - t0)
        r = None
    print(json.dumps(dict(side=SIDE, threads=T, edges=int(A.nnz), n=A.shape[0],
                          first_s=first_s, times_s=times, median_s=float(np.median(times)),
                          peak_hwm_mib=grow_hwm / 2**20, peak_sampled_mib=grow_sampled / 2**20,
                          max_rss_mib=hwm() / 2**20, load_before=load0,
                          load_after=os.getloadavg(), **d)), flush=True)


if __name__ == "__main__":
    main()
