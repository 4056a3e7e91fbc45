// Scatter: the intersection product driven by A's stored entries.
//
// Block (i, t) owns output row i, columns [t*J, (t+1)*J) in shared memory
// (NACC accumulators, each starting at the ⊕ identity). Its warps take the
// stored entries (k, a) of A's row i; the lanes of a warp walk column k of B
// (Bt = Bᵀ in CSR: row k lists the j storing column k), restricted to the
// tile by precomputed offsets (gb_chunk_ptr on Bt with chunk width J), and
// ⊕-combine f(a, b) into acc[j] atomically. Work is proportional to the
// pairs that actually share a column; the epilogue then writes the tile.
//
// Correct for intersection (data or structural semantics: only pairs stored
// on both sides are visited) and for union correction's g (which is 0 where
// either side is the fill); never used for a two-pass union.
//
// upper (a diagonal tile of a self-join under a metric proven symmetric: left and right
// are the same rows): only the cells (i, j) with j >= i are computed. Each warp starts
// its walk of column k at the first j >= i (a binary search: Bᵀ's rows are sorted), a
// tile wholly left of the diagonal returns at once, and only j >= i is written; the
// caller's mirror (gb_mirror_lower) fills the cells below. About half the pairs.
//
// Column tiles are capped so that four 512-thread blocks fit on an SM (full occupancy;
// strategies._scatter_cap): on an H100 that beat one tile as wide as fits by 5-36%
// although each tile walks A's row again. TPB is then 512; 1024 remains for a tile
// forced wider (strategies.SCATTER_SMEM_CAP = 0), where fewer than four 512-thread
// blocks would fit (benchmarks/atomics_probe.py, retired: docs/benchmarks.md: 8-byte shared atomics cost 1.33x the
// 4-byte ones at 512 threads, 1.10x at 1024).
//
// Registers are capped (__launch_bounds__ with 2048 / TPB blocks per SM) so that the
// register file never limits occupancy below shared memory's four blocks: float64
// accumulators and divisions had taken 40-52 registers (two or three blocks), and the
// cap was 3-9% faster in float32 and up to 20% in float64 on an H100, spills included
// (benchmarks/accumulate_probe.py, retired: docs/benchmarks.md). codegen.SCATTER_FULL_OCCUPANCY = False lifts it.
#ifndef GB_SCATTER_MIN_BLOCKS
#define GB_SCATTER_MIN_BLOCKS(TPB) (2048 / (TPB))
#endif
template <class Spec, typename I, int TPB>
__global__ void __launch_bounds__(TPB, GB_SCATTER_MIN_BLOCKS(TPB))
gb_scatter(const I* __restrict__ aptr, const I* __restrict__ aidx,
           const typename Spec::T* __restrict__ aval, long long n_left,
           const I* __restrict__ btidx, const typename Spec::T* __restrict__ btval,
           const I* __restrict__ tptr, int ntiles, long long J, long long n_right, long long K,
           typename Spec::T* __restrict__ out,
           const typename Spec::A* __restrict__ colred, const typename Spec::A* __restrict__ rowred,
           int upper) {
  typedef typename Spec::T T;
  typedef typename Spec::A A;
  extern __shared__ __align__(16) unsigned char gb_smem[];
  A* acc = reinterpret_cast<A*>(gb_smem);  // NACC x J accumulators
  const long long i = blockIdx.x;
  const int t = blockIdx.y;
  const long long j0 = (long long)t * J;
  const long long width = (n_right - j0 < J) ? n_right - j0 : J;
  if (i >= n_left || width <= 0) return;
  if (upper && j0 + width <= i) return;  // the whole tile lies below the diagonal
  const long long first = (upper && i > j0) ? i - j0 : 0;  // the tile's first cell written
  {
    A init[Spec::NACC];
    Spec::init(init);
    for (long long q = threadIdx.x; q < width; q += blockDim.x) {
#pragma unroll
      for (int s = 0; s < Spec::NACC; ++s) acc[s * J + q] = init[s];
    }
  }
  __syncthreads();
  const int lane = threadIdx.x & 31;
  const int warp = threadIdx.x >> 5;
  const int nwarps = blockDim.x >> 5;
  for (I p = aptr[i] + (I)warp; p < aptr[i + 1]; p += (I)nwarps) {
    const long long k = (long long)aidx[p];
    const T a = aval[p];
    I q0 = tptr[k * (ntiles + 1) + t];
    const I q1 = tptr[k * (ntiles + 1) + t + 1];
    if (first > 0) q0 = gb_lower_bound(btidx, q0, q1, i);  // column k's first j >= i
    for (I q = q0 + (I)lane; q < q1; q += 32) {
      Spec::scatter_step(acc, J, (long long)btidx[q] - j0, a, btval[q]);
    }
  }
  __syncthreads();
  for (long long q = first + threadIdx.x; q < width; q += blockDim.x) {
    A v[Spec::NACC];
#pragma unroll
    for (int s = 0; s < Spec::NACC; ++s) v[s] = acc[s * J + q];
    out[i * n_right + j0 + q] = (T)Spec::epilogue(v, i, j0 + q, n_left, n_right, colred, rowred, K);
  }
}
