"""Peer implementations the benchmark runner times gbdist against.

Each peer is a plain function ``peer(Q, X, metric) -> dense distance matrix``
of shape ``(Q.shape[0], X.shape[0])``, or raises ``NotImplementedError`` for a
metric (or a size) it cannot handle.  ``Q`` and ``X`` are CSR matrices with
rows = samples.

* :func:`sklearn_cpu` -- ``sklearn.metrics.pairwise_distances`` on the sparse
  inputs (CPU, all cores); returns a NumPy array.
* :func:`cusparse` -- cuSPARSE through ``cupyx.scipy.sparse``: the product
  ``Q @ X.T`` plus the norm expansion, for the dot-product family; returns a
  CuPy array.
* :func:`torch_cdist` -- ``torch.cdist`` on dense float32 GPU copies; returns a
  torch tensor.
* :func:`naive_merge` -- the paper's naive baseline: a CUDA kernel with one
  thread per output pair that merges the two sorted CSR rows; returns a CuPy
  array.

CuPy and torch are imported inside the functions, so this module imports on a
machine without them.  To time only the computation, convert the inputs
beforehand: the GPU peers accept already-converted inputs and pass them
through (:func:`to_gpu_csr` for ``cusparse`` / ``naive_merge``,
:func:`to_torch_dense` for ``torch_cdist``).

Conventions shared with SciPy/scikit-learn: ``cosine`` is ``1 - <q, x> /
(|q| |x|)`` clipped to ``[0, 2]``, and a zero row (zero norm) gives distance 1
(scikit-learn's convention; SciPy would give NaN).  ``jensenshannon`` is SciPy's
formula without normalising the rows to sum 1.

Timing helpers: :func:`timeit_cuda` (CUDA events, median in ms) and
:func:`timeit_cpu` (``time.perf_counter``, median in ms).

:func:`self_check` (``python benchmarks/run.py distances --check-peers``, on the GPU
machine) checks every peer against a float64 reference before its times are trusted.
"""

from __future__ import annotations

import math
import statistics
import time
import warnings
from pathlib import Path

import numpy as np
import scipy.sparse as sp

# Metric names accepted by the peers, with aliases mapped to one spelling.
_ALIASES = {
    "l1": "manhattan",
    "cityblock": "manhattan",
    "l2": "euclidean",
    "inner": "inner_product",
    "dot": "inner_product",
}

SKLEARN_METRICS = ("cosine", "euclidean", "manhattan")
CUSPARSE_METRICS = ("cosine", "euclidean", "sqeuclidean", "inner_product")
TORCH_METRICS = {"euclidean": 2.0, "manhattan": 1.0, "chebyshev": math.inf}

# Metric ids of the naive merge kernel (the METRIC macro of its source).
NAIVE_METRICS = {
    "manhattan": 0,
    "euclidean": 1,
    "sqeuclidean": 2,
    "chebyshev": 3,
    "canberra": 4,
    "jensenshannon": 5,
    "cosine": 6,
    "inner_product": 7,
}


class DoesNotFit(NotImplementedError):
    """The peer would need more memory than is available (a kind of NotImplementedError)."""



def gpu_present() -> bool:
    """Whether CuPy imports and sees a CUDA device (the sections' default device)."""
    try:
        import cupy
        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:  # noqa: BLE001 - no CuPy, no driver, no device
        return False

def canonical_metric(metric: str) -> str:
    """Lower-case ``metric`` and resolve aliases (``l1`` -> ``manhattan``, ...)."""
    m = metric.lower()
    return _ALIASES.get(m, m)


def _scipy_csr(a) -> sp.csr_matrix:
    """SciPy CSR, float32 data, int32 indices, sorted and without duplicates."""
    m = sp.csr_matrix(a)
    if not m.has_canonical_format:
        m = m.copy()
        m.sum_duplicates()
    return sp.csr_matrix(
        (
            m.data.astype(np.float32, copy=False),
            m.indices.astype(np.int32, copy=False),
            m.indptr.astype(np.int32, copy=False),
        ),
        shape=m.shape,
    )


def _cupy():
    try:
        import cupy
        import cupyx.scipy.sparse  # noqa: F401
    except ImportError as err:  # pragma: no cover - depends on the machine
        raise NotImplementedError(f"CuPy is not available: {err}") from err
    return cupy


def _is_cupy_sparse(a) -> bool:
    try:
        import cupyx.scipy.sparse as cpsp
    except ImportError:
        return False
    return cpsp.issparse(a)


# --------------------------------------------------------------------------
# input conversion
# --------------------------------------------------------------------------


def to_gpu_csr(a):
    """``a`` as a ``cupyx.scipy.sparse.csr_matrix`` (float32, sorted, no duplicates).

    SciPy matrices are copied to the GPU; CuPy sparse matrices are converted in
    place on the GPU (a canonical float32 CSR is returned unchanged).
    """
    cp = _cupy()
    import cupyx.scipy.sparse as cpsp

    if cpsp.issparse(a):
        m = a.tocsr()
        if m.dtype != cp.float32:
            m = m.astype(cp.float32)
        if not m.has_canonical_format:
            m = m.copy()
            m.sum_duplicates()  # also sorts the indices
        return m
    return cpsp.csr_matrix(_scipy_csr(a))


def to_torch_dense(a, device="cuda"):
    """``a`` as a dense float32 torch tensor on ``device`` (densified on the GPU)."""
    import torch

    if isinstance(a, torch.Tensor):
        return a.to(device=device, dtype=torch.float32)
    if _is_cupy_sparse(a):
        return torch.from_dlpack(a.toarray().astype("float32", copy=False)).to(device)
    m = _scipy_csr(a)
    with warnings.catch_warnings():
        # torch notes that sparse CSR is beta and that invariant checks are off:
        # the CSR here is canonical, so both notes are noise.
        warnings.filterwarnings("ignore", message="Sparse CSR tensor support is in beta")
        warnings.filterwarnings("ignore", message="Sparse invariant checks")
        t = torch.sparse_csr_tensor(
            torch.from_numpy(m.indptr.astype(np.int64)),
            torch.from_numpy(m.indices.astype(np.int64)),
            torch.from_numpy(m.data),
            size=m.shape,
            device=device,
            check_invariants=False,
        )
        return t.to_dense()


# --------------------------------------------------------------------------
# scikit-learn on the CPU
# --------------------------------------------------------------------------


def sklearn_cpu(Q, X, metric, n_jobs=-1):
    """``sklearn.metrics.pairwise_distances`` on the sparse inputs, all cores.

    scikit-learn takes sparse input for cosine, euclidean and manhattan; any
    other metric raises NotImplementedError.
    """
    from sklearn.metrics import pairwise_distances

    metric = canonical_metric(metric)
    if metric not in SKLEARN_METRICS:
        raise NotImplementedError(f"sklearn_cpu: no sparse support for {metric!r}")
    return pairwise_distances(_scipy_csr(Q), _scipy_csr(X), metric=metric, n_jobs=n_jobs)


# --------------------------------------------------------------------------
# cuSPARSE (through cupyx.scipy.sparse) + norm expansion
# --------------------------------------------------------------------------

_EXPAND_SOURCE = {
    # (dot, q, x) -> distance; q and x are the squared row norms.
    "sqeuclidean": "out = fmaxf(q + x - 2.0f * dot, 0.0f)",
    "euclidean": "out = sqrtf(fmaxf(q + x - 2.0f * dot, 0.0f))",
    "cosine": """
        float den = sqrtf(q) * sqrtf(x);
        float sim = den > 0.0f ? dot / den : 0.0f;
        out = fminf(fmaxf(1.0f - sim, 0.0f), 2.0f);
    """,
}
_expand_kernels = {}


def _expand_kernel(metric):
    """Fused elementwise kernel turning (dot, |q|^2, |x|^2) into the distance."""
    kernel = _expand_kernels.get(metric)
    if kernel is None:
        cp = _cupy()
        kernel = cp.ElementwiseKernel(
            "float32 dot, float32 q, float32 x",
            "float32 out",
            _EXPAND_SOURCE[metric],
            f"gbdist_bench_expand_{metric}",
        )
        _expand_kernels[metric] = kernel
    return kernel


def _row_sq_norms(m):
    """Squared L2 norm of each row of a cupyx CSR matrix, as a 1-D float32 array."""
    cp = _cupy()
    import cupyx.scipy.sparse as cpsp

    squares = cpsp.csr_matrix((m.data * m.data, m.indices, m.indptr), shape=m.shape)
    return cp.asarray(squares.sum(axis=1), dtype=cp.float32).ravel()


def cusparse(Q, X, metric, mode="spgemm"):
    """Dot-product distances through cuSPARSE (``cupyx.scipy.sparse``).

    ``mode="spgemm"`` (default): sparse ``Q @ X.T`` (cuSPARSE SpGEMM, with
    ``X.T`` converted to CSR inside), then densified.  ``mode="spmm"``: ``Q``
    times a dense copy of ``X.T`` (cuSPARSE SpMM); raises :class:`DoesNotFit`
    when that copy does not fit in GPU memory.  Then the norm expansion in one
    fused elementwise kernel.  Metrics: cosine, euclidean, sqeuclidean,
    inner_product.  Returns a CuPy float32 array.
    """
    metric = canonical_metric(metric)
    if metric not in CUSPARSE_METRICS:
        raise NotImplementedError(f"cusparse: {metric!r} is not a dot-product metric")
    cp = _cupy()
    q = to_gpu_csr(Q)
    x = to_gpu_csr(X)
    if mode == "spgemm":
        xt = x.T.tocsr()
        dot = (q @ xt).toarray()
    elif mode == "spmm":
        need = 4 * (x.shape[0] * x.shape[1] + q.shape[0] * x.shape[0])
        free, _ = cp.cuda.runtime.memGetInfo()
        if need > 0.9 * free:
            raise DoesNotFit(f"cusparse spmm: needs {need / 2**30:.1f} GiB, {free / 2**30:.1f} GiB free")
        dot = q @ cp.ascontiguousarray(x.T.toarray())
    else:
        raise ValueError(f"cusparse: unknown mode {mode!r}")
    dot = cp.ascontiguousarray(dot, dtype=cp.float32)
    if metric == "inner_product":
        return dot
    qn = _row_sq_norms(q)
    xn = _row_sq_norms(x)
    return _expand_kernel(metric)(dot, qn[:, None], xn[None, :], dot)


# --------------------------------------------------------------------------
# torch.cdist on dense copies
# --------------------------------------------------------------------------


def torch_cdist(Q, X, metric, max_bytes=None):
    """``torch.cdist`` on dense float32 GPU copies of ``Q`` and ``X``.

    p = 2 (euclidean), 1 (manhattan) or inf (chebyshev).  Raises
    :class:`DoesNotFit` (a NotImplementedError) when the dense inputs plus the
    output would take more than ``max_bytes`` (default: 90% of the free GPU
    memory).  Returns a torch tensor.
    """
    import torch

    metric = canonical_metric(metric)
    if metric not in TORCH_METRICS:
        raise NotImplementedError(f"torch_cdist: no p-norm for {metric!r}")
    n_q, n_cols = Q.shape
    n_x = X.shape[0]
    need = 4 * (n_q * n_cols + n_x * n_cols + n_q * n_x)
    if max_bytes is None:
        free, _ = torch.cuda.mem_get_info()
        max_bytes = 0.9 * free
    if need > max_bytes:
        raise DoesNotFit(f"torch_cdist: dense copies need {need / 2**30:.1f} GiB > {max_bytes / 2**30:.1f} GiB")
    qd = to_torch_dense(Q)
    xd = to_torch_dense(X)
    return torch.cdist(qd, xd, p=TORCH_METRICS[metric])


# --------------------------------------------------------------------------
# naive merge kernel (the paper's baseline)
# --------------------------------------------------------------------------

NAIVE_MERGE_SOURCE = r"""
// Naive sparse pairwise distances: one thread per output pair (i, j).
// The thread merges CSR row i of Q with CSR row j of X (two pointers over the
// union of their sorted column indices) and accumulates the metric.
// METRIC selects the accumulate (compile with -DMETRIC=<id>).

#ifndef METRIC
#define METRIC 0
#endif

#define M_MANHATTAN 0
#define M_EUCLIDEAN 1
#define M_SQEUCLIDEAN 2
#define M_CHEBYSHEV 3
#define M_CANBERRA 4
#define M_JENSENSHANNON 5
#define M_COSINE 6
#define M_INNER_PRODUCT 7

#define NO_COLUMN 0x7fffffff

struct Acc {
    float s;    // sum (or max) of the per-column terms
    float dot;  // cosine / inner product: sum of q * x
    float qq;   // cosine: sum of q * q
    float xx;   // cosine: sum of x * x
};

__host__ __device__ __forceinline__ void acc_add(Acc &acc, float a, float b)
{
    switch (METRIC) {
    case M_MANHATTAN:
        acc.s += fabsf(a - b);
        break;
    case M_EUCLIDEAN:
    case M_SQEUCLIDEAN: {
        float d = a - b;
        acc.s += d * d;
        break;
    }
    case M_CHEBYSHEV:
        acc.s = fmaxf(acc.s, fabsf(a - b));
        break;
    case M_CANBERRA: {
        float den = fabsf(a) + fabsf(b);
        if (den > 0.0f) {  // 0 / 0 counts as 0
            acc.s += fabsf(a - b) / den;
        }
        break;
    }
    case M_JENSENSHANNON: {
        // p log(2p / (p + q)) + q log(2q / (p + q)), with 0 log 0 = 0
        float m = a + b;
        if (a > 0.0f) {
            acc.s += a * logf(2.0f * a / m);
        }
        if (b > 0.0f) {
            acc.s += b * logf(2.0f * b / m);
        }
        break;
    }
    case M_COSINE:
        acc.dot += a * b;
        acc.qq += a * a;
        acc.xx += b * b;
        break;
    case M_INNER_PRODUCT:
        acc.dot += a * b;
        break;
    }
}

__host__ __device__ __forceinline__ float acc_finish(const Acc &acc)
{
    switch (METRIC) {
    case M_EUCLIDEAN:
        return sqrtf(acc.s);
    case M_JENSENSHANNON:
        return sqrtf(fmaxf(0.5f * acc.s, 0.0f));
    case M_COSINE: {
        float den = sqrtf(acc.qq) * sqrtf(acc.xx);
        float sim = den > 0.0f ? acc.dot / den : 0.0f;  // a zero row: distance 1
        return fminf(fmaxf(1.0f - sim, 0.0f), 2.0f);
    }
    case M_INNER_PRODUCT:
        return acc.dot;
    default:
        return acc.s;
    }
}

// Distance between row i of Q and row j of X by a two-pointer merge.
__host__ __device__ __forceinline__ float merge_pair(
    const int *__restrict__ q_indptr, const int *__restrict__ q_indices,
    const float *__restrict__ q_data,
    const int *__restrict__ x_indptr, const int *__restrict__ x_indices,
    const float *__restrict__ x_data,
    int i, int j)
{
    Acc acc;
    acc.s = 0.0f;
    acc.dot = 0.0f;
    acc.qq = 0.0f;
    acc.xx = 0.0f;

    int a = q_indptr[i];
    const int a_end = q_indptr[i + 1];
    int b = x_indptr[j];
    const int b_end = x_indptr[j + 1];

    while (a < a_end || b < b_end) {
        const int col_a = a < a_end ? q_indices[a] : NO_COLUMN;
        const int col_b = b < b_end ? x_indices[b] : NO_COLUMN;
        float va = 0.0f;
        float vb = 0.0f;
        if (col_a == col_b) {
            va = q_data[a];
            vb = x_data[b];
            ++a;
            ++b;
        } else if (col_a < col_b) {
            va = q_data[a];
            ++a;
        } else {
            vb = x_data[b];
            ++b;
        }
        acc_add(acc, va, vb);
    }
    return acc_finish(acc);
}

// 2-D launch: x over the rows j of X (adjacent threads write adjacent outputs),
// y over the rows i of Q (grid-stride, in case n_q exceeds the grid's y range).
extern "C" __global__ void naive_merge_distance(
    const int *__restrict__ q_indptr, const int *__restrict__ q_indices,
    const float *__restrict__ q_data,
    const int *__restrict__ x_indptr, const int *__restrict__ x_indices,
    const float *__restrict__ x_data,
    const int n_q, const int n_x, float *__restrict__ out)
{
    const int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= n_x) {
        return;
    }
    for (int i = blockIdx.y * blockDim.y + threadIdx.y; i < n_q; i += gridDim.y * blockDim.y) {
        out[(long long)i * n_x + j] =
            merge_pair(q_indptr, q_indices, q_data, x_indptr, x_indices, x_data, i, j);
    }
}
"""

NAIVE_BLOCK = (32, 8)
_naive_kernels = {}


def _naive_kernel(metric):
    """The compiled naive merge kernel for ``metric`` (cached per metric)."""
    kernel = _naive_kernels.get(metric)
    if kernel is None:
        cp = _cupy()
        kernel = cp.RawKernel(
            NAIVE_MERGE_SOURCE,
            "naive_merge_distance",
            options=(f"-DMETRIC={NAIVE_METRICS[metric]}",),
        )
        _naive_kernels[metric] = kernel
    return kernel


def naive_merge(Q, X, metric, out=None):
    """The naive baseline: one CUDA thread per output pair merging two sorted CSR rows.

    Metrics: manhattan, euclidean, sqeuclidean, chebyshev, canberra,
    jensenshannon, cosine, inner_product.  Float32 accumulation, int32 indices.
    Returns a CuPy float32 array of shape ``(Q.shape[0], X.shape[0])``
    (``out`` if given: a C-contiguous float32 CuPy array of that shape).
    """
    metric = canonical_metric(metric)
    if metric not in NAIVE_METRICS:
        raise NotImplementedError(f"naive_merge: no accumulate for {metric!r}")
    cp = _cupy()
    q = to_gpu_csr(Q)
    x = to_gpu_csr(X)
    if q.shape[1] != x.shape[1]:
        raise ValueError(f"naive_merge: column counts differ: {q.shape[1]} vs {x.shape[1]}")
    n_q, n_x = q.shape[0], x.shape[0]
    if out is None:
        out = cp.empty((n_q, n_x), dtype=cp.float32)
    elif out.shape != (n_q, n_x) or out.dtype != cp.float32 or not out.flags.c_contiguous:
        raise ValueError("naive_merge: out must be a C-contiguous float32 array of shape (n_q, n_x)")
    if n_q == 0 or n_x == 0:
        return out
    bx, by = NAIVE_BLOCK
    grid = ((n_x + bx - 1) // bx, min((n_q + by - 1) // by, 65535))
    args = (
        q.indptr.astype(cp.int32, copy=False),
        q.indices.astype(cp.int32, copy=False),
        cp.ascontiguousarray(q.data, dtype=cp.float32),
        x.indptr.astype(cp.int32, copy=False),
        x.indices.astype(cp.int32, copy=False),
        cp.ascontiguousarray(x.data, dtype=cp.float32),
        np.int32(n_q),
        np.int32(n_x),
        out,
    )
    _naive_kernel(metric)(grid, NAIVE_BLOCK, args)
    return out


PEERS = {
    "sklearn_cpu": sklearn_cpu,
    "cusparse": cusparse,
    "torch_cdist": torch_cdist,
    "naive_merge": naive_merge,
}


# --------------------------------------------------------------------------
# timing
# --------------------------------------------------------------------------


def timeit_cuda(fn, repeats=20, warmup=3, return_times=False):
    """Median time of ``fn()`` in ms, measured with CUDA events (CuPy).

    ``warmup`` untimed calls first (compilation, handles, caches).  Each timed
    call is bracketed by events recorded on CuPy's current stream; work that
    ``fn`` issues on the legacy default stream (CuPy's and torch's default) is
    covered, and host time inside ``fn`` counts while the GPU waits.  With
    ``return_times`` the list of all times is returned as well.
    """
    cp = _cupy()
    for _ in range(warmup):
        fn()
    cp.cuda.Device().synchronize()
    times = []
    for _ in range(repeats):
        start = cp.cuda.Event()
        end = cp.cuda.Event()
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(cp.cuda.get_elapsed_time(start, end))
    cp.cuda.Device().synchronize()
    median = statistics.median(times)
    return (median, times) if return_times else median


def timeit_cpu(fn, repeats=5, warmup=1, return_times=False):
    """Median wall time of ``fn()`` in ms (``time.perf_counter``)."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e3)
    median = statistics.median(times)
    return (median, times) if return_times else median


# --------------------------------------------------------------------------
# self-check: the peers against a float64 reference (GPU)
# --------------------------------------------------------------------------

# Norm expansion (cusparse, torch's mm path) loses digits to cancellation.
TOLERANCE = {"sklearn_cpu": 1e-5, "cusparse": 1e-4, "torch_cdist": 1e-4, "naive_merge": 1e-5}


def reference(metric, Q, X):
    """Float64 CPU reference distances for dense or sparse ``Q`` and ``X``."""
    from scipy.spatial.distance import cdist
    from scipy.special import rel_entr
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


def _to_numpy(result):
    """CuPy array, torch tensor or NumPy array -> NumPy float64."""
    if hasattr(result, "get"):
        result = result.get()
    elif hasattr(result, "detach"):
        result = result.detach().cpu().numpy()
    return np.asarray(result, dtype=np.float64)


def _rel_err(out, ref):
    """||out - ref|| / ||ref|| (inf when out holds a NaN)."""
    if np.isnan(out).any():
        return float("inf")
    return float(np.linalg.norm(out - ref) / max(np.linalg.norm(ref), 1e-30))


def _random_pair(seed, n_cols=300, signed=False):
    """Random CSR query/data matrices with one empty query row."""
    rng = np.random.default_rng(seed)
    q = sp.random(50, n_cols, density=0.06, format="lil", random_state=rng, dtype=np.float32)
    x = sp.random(70, n_cols, density=0.12, format="csr", random_state=rng, dtype=np.float32)
    q[7, :] = 0
    q = q.tocsr()
    if signed:
        q.data -= 0.5
        x.data -= 0.5
    return _scipy_csr(q), _scipy_csr(x)


def self_check(data_dir=None) -> dict:
    """Every peer and metric it supports against :func:`reference` on three random input
    pairs (an empty query row, signed values, outputs poisoned with NaN where the peer takes
    an ``out``; GPU-resident inputs too); the naive kernel's grid-stride path (more than
    65535 * 8 query rows); naive_merge against scikit-learn on slices of the prepared sets
    when ``data_dir`` holds them, with a few timings. Prints one line per check."""
    import cupy as cp

    from benchmarks import datasets
    peer_metrics = {"sklearn_cpu": SKLEARN_METRICS, "cusparse": CUSPARSE_METRICS,
                    "torch_cdist": tuple(TORCH_METRICS), "naive_merge": tuple(NAIVE_METRICS)}
    rows, timings = [], []

    def record(where, peer, metric, err, bound):
        rows.append(dict(where=where, peer=peer, metric=metric, rel_err=err, ok=err < bound))
        print(f"{where:18s} {peer:12s} {metric:14s} rel err {err:9.2e} "
              f"{'ok' if err < bound else 'FAIL'}", flush=True)

    for seed in (11, 12, 13):
        signed = seed == 13
        q, x = _random_pair(seed, signed=signed)
        for peer_name, metrics in peer_metrics.items():
            for metric in metrics:
                if signed and metric == "jensenshannon":
                    continue
                if peer_name == "naive_merge":
                    out = cp.full((q.shape[0], x.shape[0]), cp.nan, dtype=cp.float32)
                    res = naive_merge(q, x, metric, out=out)
                else:
                    res = PEERS[peer_name](q, x, metric)
                record(f"random seed {seed}", peer_name, metric,
                       _rel_err(_to_numpy(res), reference(metric, q, x)), TOLERANCE[peer_name])
        qg, xg = to_gpu_csr(q), to_gpu_csr(x)  # GPU-resident inputs pass through too
        for peer_name in ("cusparse", "naive_merge"):
            res = PEERS[peer_name](qg, xg, "cosine")
            record(f"gpu inputs {seed}", peer_name, "cosine",
                   _rel_err(_to_numpy(res), reference("cosine", q, x)), 1e-4)
    rng = np.random.default_rng(21)  # more query rows than one grid covers in y
    q = _scipy_csr(sp.random(600_000, 40, density=0.1, format="csr", random_state=rng, dtype=np.float32))
    x = _scipy_csr(sp.random(3, 40, density=0.5, format="csr", random_state=rng, dtype=np.float32))
    record("600000 x 3", "naive_merge", "manhattan",
           _rel_err(_to_numpy(naive_merge(q, x, "manhattan")), reference("manhattan", q, x)), 1e-5)
    if data_dir is not None and datasets.is_prepared_dir(data_dir):
        for name in [n for n in datasets.REAL_NAMES if (Path(data_dir) / f"{n}.npz").is_file()]:
            m, _ = datasets.load(name, data_dir)
            q, x = m[:128], m[: min(m.shape[0], 4096)]
            for metric in ("cosine", "manhattan"):
                ref = sklearn_cpu(q.astype(np.float64), x.astype(np.float64), metric)
                record(name, "naive_merge", metric,
                       _rel_err(_to_numpy(naive_merge(q, x, metric)), np.asarray(ref)), 1e-5)
            if m.shape[0] <= 5000:
                qg = to_gpu_csr(m)
                timings.append((name, "naive_merge cosine",
                                timeit_cuda(lambda: naive_merge(qg, qg, "cosine"), 5, 2)))
                timings.append((name, "cusparse cosine",
                                timeit_cuda(lambda: cusparse(qg, qg, "cosine"), 5, 2)))
    else:
        print(f"no prepared data in {data_dir}: real-data checks skipped")
    for name, what, ms in timings:
        print(f"time {name:13s} {what:20s} {ms:9.3f} ms")
    failures = [r for r in rows if not r["ok"]]
    print(f"{len(rows)} checks, {len(failures)} failures")
    return {"checks": rows, "timings": timings, "failed": bool(failures)}
