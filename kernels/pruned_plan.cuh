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
//
// gb_prune_union_top<U, I> (behind pruned_plan.UNION_TOP; issue 29): the same out[t] for a
// union whose ⊕ is max or min and whose corner needs no shared count, split as
// ⊕(∩ part, A∖B part, B∖A part): the ∩ part is the overlap SpGEMM's value (computed for the
// pattern anyway), each one-sided part the key of the first entry of the row, in an order
// sorted once per call by f(x, z_B) (f(z_A, y)) best first, whose column the other row
// lacks: one or two binary searches a pair for most pairs instead of a search per entry of
// both rows. Values equal gb_prune_union's (max and min are exact; a zero maximum may differ
// in sign, as gb_prune_union's own does between lane counts). NaN: a row with an entry
// not finite through its chain, or with a NaN key, is marked bad (gb_prune_union_keys) and
// its pairs run gb_prune_union's per-pair loop on one lane; otherwise no term is NaN (the
// caller admits only a ⊗ that is never NaN at finite arguments), so the SpGEMM's fmax
// and gb_max agree.

#ifndef GB_PRUNED_PLAN_CUH
#define GB_PRUNED_PLAN_CUH

template <class Map>
__global__ void gb_prune_map(const typename Map::T* __restrict__ val, long long n,
                             double* __restrict__ out) {
  for (long long p = (long long)blockIdx.x * blockDim.x + threadIdx.x; p < n;
       p += (long long)gridDim.x * blockDim.x)
    out[p] = (double)Map::map(val[p]);
}

// One lane's share of a two-pass union at pair (i, j): row i's entries lane, lane + G, ...
// (a binary search in row j's sorted columns says whether j stores the column too) and
// row j's (counted only where row i lacks the column), ⊕-ed into acc; cnt counts the
// shared columns. gb_prune_union runs it on G lanes a pair, gb_prune_union_top on one
// (lane 0, G = 1) at the pairs whose rows it cannot split.
template <class U, typename I>
__device__ __forceinline__ void gb_union_share(
    const I* __restrict__ Ap, const int* __restrict__ Aj, const typename U::T* __restrict__ Ax,
    const I* __restrict__ Bp, const int* __restrict__ Bj, const typename U::T* __restrict__ Bx,
    long long i, long long j, int lane, int G, typename U::A& acc, long long& cnt) {
  typedef typename U::A A;
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
    if (w < npairs) gb_union_share<U, I>(Ap, Aj, Ax, Bp, Bj, Bx, pi[w], pj[w], lane, G, acc, cnt);
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

// gb_prune_union_keys<U, SIDE>: for each stored entry p of A (SIDE 0) or B (SIDE 1), the
// term it gives at a column the other row lacks, key[p] = f(x, z_B) (SIDE 0) or
// f(z_A, y) (SIDE 1), x, y through the side's apply chain; bad[p] = 1 where x (y) is not
// finite or the key is NaN (such a row's pairs take gb_union_share: module comment).
template <class U, int SIDE>
__global__ void gb_prune_union_keys(const typename U::T* __restrict__ val, long long n,
                                    double* __restrict__ key, unsigned char* __restrict__ bad) {
  typedef typename U::A A;
  for (long long p = (long long)blockIdx.x * blockDim.x + threadIdx.x; p < n;
       p += (long long)gridDim.x * blockDim.x) {
    const A x = SIDE == 0 ? U::left(val[p]) : U::right(val[p]);
    const A k = SIDE == 0 ? U::f(x, U::zb()) : U::f(U::za(), x);
    key[p] = (double)k;
    bad[p] = (x - x != (A)0 || k != k) ? 1 : 0;  // x - x: NaN for ±inf and NaN
  }
}

// The first of a row's entries, in the row's key order (Sc: their columns, Sk: their
// keys, positions s0..s1), whose column the other row (columns Oj[o0..o1), sorted) does
// not store: its key; the identity if the other row stores every one.
template <class U>
__device__ __forceinline__ typename U::A gb_union_top_part(
    const int* __restrict__ Sc, const double* __restrict__ Sk, long long s0, long long s1,
    const int* __restrict__ Oj, long long o0, long long o1) {
  for (long long p = s0; p < s1; ++p) {
    const int c = Sc[p];
    long long lo = o0, hi = o1;
    while (lo < hi) {
      const long long mid = (lo + hi) >> 1;
      if (Oj[mid] < c) lo = mid + 1; else hi = mid;
    }
    if (!(lo < o1 && Oj[lo] == c)) return (typename U::A)Sk[p];
  }
  return U::identity();
}

// gb_prune_union_top<U, I>: the same out[t] as gb_prune_union for a union whose ⊕ is max or
// min (gb_max / gb_min) and whose corner needs no shared count, one thread a pair, as
// ⊕(∩ part, A∖B part, B∖A part): inter[t] is the overlap SpGEMM's value at the pair (⊕ over
// the shared columns of f(x, y)); the A∖B part is ⊕ over the columns row i stores and row
// j lacks of f(x, z_B): with row i's entries sorted by that key (Ac / Ak: columns / keys,
// best first, each row in place of its CSR positions) it is the key of the first entry whose
// column row j lacks (gb_union_top_part); B∖A symmetric (Bc / Bk against row i). Where row
// i or row j is marked bad (an entry not finite through its chain or a NaN key) the pair
// takes gb_union_share on one lane (the SpGEMM's fmax ignores a NaN term, gb_max keeps it).
template <class U, typename I>
__global__ void gb_prune_union_top(const I* __restrict__ Ap, const int* __restrict__ Aj,
                                   const typename U::T* __restrict__ Ax,
                                   const int* __restrict__ Ac, const double* __restrict__ Ak,
                                   const unsigned char* __restrict__ Abad,
                                   const I* __restrict__ Bp, const int* __restrict__ Bj,
                                   const typename U::T* __restrict__ Bx,
                                   const int* __restrict__ Bc, const double* __restrict__ Bk,
                                   const unsigned char* __restrict__ Bbad,
                                   const long long* __restrict__ pi, const long long* __restrict__ pj,
                                   const double* __restrict__ inter, long long npairs,
                                   double* __restrict__ out) {
  typedef typename U::A A;
  for (long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x; t < npairs;
       t += (long long)gridDim.x * blockDim.x) {
    const long long i = pi[t], j = pj[t];
    A acc = U::identity();
    if (Abad[i] | Bbad[j]) {
      long long cnt = 0;
      gb_union_share<U, I>(Ap, Aj, Ax, Bp, Bj, Bx, i, j, 0, 1, acc, cnt);
    } else {
      const long long a0 = (long long)Ap[i], a1 = (long long)Ap[i + 1];
      const long long b0 = (long long)Bp[j], b1 = (long long)Bp[j + 1];
      acc = U::combine(acc, (A)inter[t]);
      acc = U::combine(acc, gb_union_top_part<U>(Ac, Ak, a0, a1, Bj, b0, b1));
      acc = U::combine(acc, gb_union_top_part<U>(Bc, Bk, b0, b1, Aj, a0, a1));
    }
    out[t] = (double)acc;
  }
}

#endif  // GB_PRUNED_PLAN_CUH
