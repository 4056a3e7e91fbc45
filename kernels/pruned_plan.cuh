// The pruned kNN on the device, the parts that read the plan's formulas
// (gbdist/backends/cuda/pruned_plan.py generates the structs they are instantiated with,
// after kernels/gbdist.cuh and beside kernels/row_reduce.cuh's gb_row_reduce, which
// computes the row summaries). Compiled by NVRTC (through CuPy) or nvcc; no system headers.
//
// gb_prune_map<Map>: out[p] = Map::map(val[p]) in double: an operand's apply chain on its
// stored values (the values the overlap SpGEMM reads).
//
// gb_prune_union<U, I, G>: a two-pass union at chosen pairs (i, j) (the overlapping ones),
// G lanes a pair (32 / G pairs a warp; G from the rows' mean length): ⊕ over the columns both rows store of f(x, y), over those only row i of
// A stores of f(x, z_B), over those only row j of B stores of f(z_A, y) (x, y the values
// through each side's apply chain, U::left / U::right; z_A, z_B the sides' fills). Each
// lane takes a share of row i's entries (a binary search in row j's sorted columns says
// whether j stores the column too) and of row j's (counted only where row i lacks the
// column); the lanes' partial ⊕ and shared-column counts are then combined by shuffles.
// out[t] is the ⊕ without the corner f(z_A, z_B) (the caller adds it from the count of
// columns neither row stores, ncols - (nnz_i + nnz_j - shared[t])). A grid-stride loop
// over the pairs (the launch caps its blocks).

#ifndef GB_PRUNED_PLAN_CUH
#define GB_PRUNED_PLAN_CUH

template <class Map>
__global__ void gb_prune_map(const typename Map::T* __restrict__ val, long long n,
                             double* __restrict__ out) {
  for (long long p = (long long)blockIdx.x * blockDim.x + threadIdx.x; p < n;
       p += (long long)gridDim.x * blockDim.x)
    out[p] = (double)Map::map(val[p]);
}

template <class U, typename I, int G>
__global__ void gb_prune_union(const I* __restrict__ Ap, const int* __restrict__ Aj,
                               const typename U::T* __restrict__ Ax,
                               const I* __restrict__ Bp, const int* __restrict__ Bj,
                               const typename U::T* __restrict__ Bx,
                               const long long* __restrict__ pi, const long long* __restrict__ pj,
                               long long npairs, double* __restrict__ out,
                               long long* __restrict__ shared) {
  typedef typename U::A A;
  const int lane = threadIdx.x & (G - 1);   // G lanes a pair, 32 / G pairs a warp at once
  const int sub = (threadIdx.x & 31) / G;
  const long long per = 32 / G;
  const long long warp = ((long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
  const long long stride = (((long long)gridDim.x * blockDim.x) >> 5) * per;
  // base is the same for a warp's 32 lanes: the loop and the shuffles run warp-uniform
  for (long long base = warp * per; base < npairs; base += stride) {
    const long long w = base + sub;
    A acc = U::identity();
    long long cnt = 0;
    if (w < npairs) {
      const long long i = pi[w], j = pj[w];
      const long long a0 = (long long)Ap[i], a1 = (long long)Ap[i + 1];
      const long long b0 = (long long)Bp[j], b1 = (long long)Bp[j + 1];
      for (long long p = a0 + lane; p < a1; p += G) {
        const int c = Aj[p];
        long long lo = b0, hi = b1;  // the first position of row j with column >= c
        while (lo < hi) {
          const long long mid = (lo + hi) >> 1;
          if (Bj[mid] < c) lo = mid + 1; else hi = mid;
        }
        const A x = U::left(Ax[p]);
        if (lo < b1 && Bj[lo] == c) {
          acc = U::combine(acc, U::f(x, U::right(Bx[lo])));
          ++cnt;
        } else {
          acc = U::combine(acc, U::f(x, U::zb()));
        }
      }
      for (long long q = b0 + lane; q < b1; q += G) {
        const int c = Bj[q];
        long long lo = a0, hi = a1;
        while (lo < hi) {
          const long long mid = (lo + hi) >> 1;
          if (Aj[mid] < c) lo = mid + 1; else hi = mid;
        }
        if (!(lo < a1 && Aj[lo] == c)) acc = U::combine(acc, U::f(U::za(), U::right(Bx[q])));
      }
    }
#pragma unroll
    for (int off = G / 2; off > 0; off >>= 1) {
      acc = U::combine(acc, __shfl_xor_sync(0xffffffffu, acc, off, G));
      cnt += __shfl_xor_sync(0xffffffffu, cnt, off, G);
    }
    if (lane == 0 && w < npairs) {
      out[w] = (double)acc;
      shared[w] = cnt;
    }
  }
}

#endif  // GB_PRUNED_PLAN_CUH
