"""What a shared-memory atomic add costs on this GPU, by type (issue 8's float64 cost).

The scatter strategy ⊕-combines f(a, b) into a row of shared-memory accumulators with
atomics. This probe runs the same access pattern (one block per output row, J
accumulators, ``--updates`` random column hits per block) with float32, float64 and
64-bit integer accumulators, and with 512 and 1024 threads per block, and prints the
median kernel time of each (CUDA events) and the float64 / float32 ratio. Each result is
checked against a host sum first. If int64 adds are much cheaper than float64 ones,
fixed-point accumulation (exact and order-independent) is the way to cut the cost.

    python benchmarks/atomics_probe.py [--rows 2048 --cols 11314 --updates 200000]
"""
from __future__ import annotations

import argparse

import numpy as np

SRC = r"""
template <typename A, typename V>
__device__ __forceinline__ void add(A* p, V v) { atomicAdd(p, (A)v); }
template <>
__device__ __forceinline__ void add<unsigned long long, double>(unsigned long long* p, double v) {
  atomicAdd(p, (unsigned long long)(long long)__double2ll_rn(v * 1099511627776.0));  // 2^40
}
template <typename A>
__global__ void probe(const int* __restrict__ cols, const float* __restrict__ vals, long long updates,
                      long long J, double* __restrict__ out) {
  extern __shared__ __align__(16) unsigned char smem[];
  A* acc = reinterpret_cast<A*>(smem);
  for (long long q = threadIdx.x; q < J; q += blockDim.x) acc[q] = (A)0;
  __syncthreads();
  const long long base = (long long)blockIdx.x * 7919;
  for (long long p = threadIdx.x; p < updates; p += blockDim.x) {
    const long long r = (base + p) % updates;
    add<A, double>(acc + cols[r], (double)vals[r] * (double)vals[(r + 1) % updates]);
  }
  __syncthreads();
  for (long long q = threadIdx.x; q < J; q += blockDim.x) {
    double v;
    if (sizeof(A) == 8 && (A)0.5 == (A)0) v = (double)(long long)acc[q] / 1099511627776.0;
    else v = (double)acc[q];
    out[(long long)blockIdx.x * J + q] = v;
  }
}
"""


def main(argv=None) -> int:
    import cupy as cp
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=2048)
    ap.add_argument("--cols", type=int, default=11314)
    ap.add_argument("--updates", type=int, default=200_000)
    ap.add_argument("--repeats", type=int, default=10)
    args = ap.parse_args(argv)
    rng = np.random.default_rng(0)
    cols = rng.integers(0, args.cols, args.updates).astype(np.int32)
    vals = rng.random(args.updates).astype(np.float32)
    names = ["probe<float>", "probe<double>", "probe<unsigned long long>"]
    mod = cp.RawModule(code=SRC, options=("-std=c++17",), name_expressions=names)
    dcols, dvals = cp.asarray(cols), cp.asarray(vals)
    out = cp.empty((args.rows, args.cols), dtype=cp.float64)
    # reference: block b's sums (every block sums the same multiset of updates)
    prod = vals.astype(np.float64) * np.roll(vals, -1).astype(np.float64)
    ref = np.bincount(cols, weights=prod, minlength=args.cols)
    print(f"{args.rows} blocks x {args.cols} accumulators, {args.updates} atomic adds per block")
    print(f"{'accumulator':<12} {'threads':>7} {'ms':>8} {'max rel err':>12}")
    base = {}
    for name, size in zip(names, (4, 8, 8)):
        for threads in (512, 1024):
            fn = mod.get_function(name)
            smem = args.cols * size
            fn.max_dynamic_shared_size_bytes = smem
            launch = lambda: fn((args.rows,), (threads,), (dcols, dvals, np.int64(args.updates),  # noqa: E731
                                                           np.int64(args.cols), out), shared_mem=smem)
            launch()
            got = cp.asnumpy(out[0])
            err = float(np.max(np.abs(got - ref) / np.maximum(np.abs(ref), 1e-30)))
            times = []
            for _ in range(args.repeats):
                a, b = cp.cuda.Event(), cp.cuda.Event()
                a.record()
                launch()
                b.record()
                b.synchronize()
                times.append(cp.cuda.get_elapsed_time(a, b))
            ms = float(np.median(times))
            base.setdefault(threads, {})[size if name != names[2] else "i64"] = ms
            label = name[6:-1].replace("unsigned long long", "int64 fixed")
            print(f"{label:<12} {threads:>7} {ms:8.3f} {err:12.1e}")
    for threads, t in base.items():
        print(f"threads {threads}: float64/float32 = {t[8] / t[4]:.2f}, int64/float32 = {t['i64'] / t[4]:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
