// The pruned kNN on the device (gbdist/backends/cuda/pruned.py): the two kernels that
// the CuPy array code around them cannot do in a few passes. Compiled by NVRTC (through
// CuPy) or nvcc after kernels/topk.cuh (gb_ord: the order-preserving image of a value:
// NaN after every number, -0.0 equal to +0.0); no system headers are included.
//
// gb_prune_free: a thread per query row. Scans an order Q of index rows from position
// start[t] and writes the first `count` positions p whose index row Q[p] does NOT share a
// column with the query (is not in the query's row of the overlap pattern C, sorted
// column indices: a binary search), -1 after the order runs out.
//
// gb_prune_tie: a thread per query row whose k-th value is a tie across keys. Scans the
// regular index rows J (ascending indices; key[p]: J[p]'s summary) in index order and
// writes the first want[t] (≤ count) index rows J[p] with lo[t] ≤ key[p] ≤ hi[t] that do
// NOT share a column with the query (as gb_prune_free), -1 after. Blocks of 2^bshift and
// 2^sshift consecutive positions whose key range [bmin, bmax] misses [lo, hi] are skipped
// whole (a query whose tie is rare at low indices costs its blocks, not its positions).
//
// gb_prune_merge: a warp per query row. Candidates are the row's overlap pairs (C's row:
// column j, value) and E extra ones (index, value; index < 0: none). Each lane keeps the
// KMAX best of its share by (value image, index) in a sorted list; kk rounds of a warp
// arg-min over the lanes' heads then write the row's kk best in order (placeholders:
// NaN and the largest int64).

#ifndef GB_PRUNED_CUH
#define GB_PRUNED_CUH

template <typename P>
__global__ void gb_prune_free(const long long* __restrict__ rows, long long nrows,
                              const P* __restrict__ Cp, const int* __restrict__ Cj,
                              const long long* __restrict__ Q, long long qlen,
                              const long long* __restrict__ start, int count,
                              long long* __restrict__ out) {
  const long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= nrows) return;
  const long long r = rows[t];
  const long long lo = (long long)Cp[r], hi = (long long)Cp[r + 1];
  long long p = start == 0 ? 0 : start[t];
  int c = 0;
  long long* o = out + t * (long long)count;
  while (c < count && p < qlen) {
    const long long j = Q[p];
    long long a = lo, b = hi;  // the first position with Cj >= j
    while (a < b) {
      const long long mid = (a + b) >> 1;
      if ((long long)Cj[mid] < j) a = mid + 1; else b = mid;
    }
    if (a == hi || (long long)Cj[a] != j) o[c++] = p;
    ++p;
  }
  for (; c < count; ++c) o[c] = -1;
}

template <typename P>
__global__ void gb_prune_tie(const long long* __restrict__ rows, long long nrows,
                             const P* __restrict__ Cp, const int* __restrict__ Cj,
                             const long long* __restrict__ J, const double* __restrict__ key,
                             long long jlen, const double* __restrict__ bmin,
                             const double* __restrict__ bmax, int bshift,
                             const double* __restrict__ smin, const double* __restrict__ smax,
                             int sshift, const double* __restrict__ lo,
                             const double* __restrict__ hi, const int* __restrict__ want,
                             int count, long long* __restrict__ out) {
  const long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= nrows) return;
  const long long r = rows[t];
  const long long clo = (long long)Cp[r], chi = (long long)Cp[r + 1];
  const double l = lo[t], h = hi[t];
  const int w = want[t] < count ? want[t] : count;
  const long long bmask = (1ll << bshift) - 1, smask = (1ll << sshift) - 1;
  long long* o = out + t * (long long)count;
  long long p = 0;
  int c = 0;
  while (c < w && p < jlen) {
    if ((p & smask) == 0) {
      const long long s = p >> sshift;
      if (smax[s] < l || smin[s] > h) { p += smask + 1; continue; }
    }
    if ((p & bmask) == 0) {
      const long long b = p >> bshift;
      if (bmax[b] < l || bmin[b] > h) { p += bmask + 1; continue; }
    }
    const double k = key[p];
    if (k >= l && k <= h) {
      const long long j = J[p];
      long long a = clo, b = chi;  // the first position with Cj >= j
      while (a < b) {
        const long long mid = (a + b) >> 1;
        if ((long long)Cj[mid] < j) a = mid + 1; else b = mid;
      }
      if (a == chi || (long long)Cj[a] != j) o[c++] = j;
    }
    ++p;
  }
  for (; c < count; ++c) o[c] = -1;
}

struct gb_pkey {
  unsigned long long v;  // gb_ord<double>::key of the value
  long long i;           // the index row
};

__device__ __forceinline__ bool gb_pless(const gb_pkey& a, const gb_pkey& b) {
  return a.v < b.v || (a.v == b.v && a.i < b.i);
}

template <int KMAX>
__device__ __forceinline__ void gb_pinsert(gb_pkey* L, int& cnt, int kk, const gb_pkey x) {
  if (cnt == kk && !gb_pless(x, L[kk - 1])) return;
  int p = cnt < kk ? cnt++ : kk - 1;
  while (p > 0 && gb_pless(x, L[p - 1])) {
    L[p] = L[p - 1];
    --p;
  }
  L[p] = x;
}

template <typename P, int KMAX>
__global__ void gb_prune_merge(const P* __restrict__ Cp, const int* __restrict__ Cj,
                               const double* __restrict__ Cv, const long long* __restrict__ Ei,
                               const double* __restrict__ Ev, int E, long long m, int kk,
                               double* __restrict__ out_d, long long* __restrict__ out_i) {
  const long long w = ((long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
  const int lane = threadIdx.x & 31;
  if (w >= m) return;
  gb_pkey L[KMAX];
  int cnt = 0;
  const long long lo = (long long)Cp[w], hi = (long long)Cp[w + 1];
  for (long long p = lo + lane; p < hi; p += 32) {
    gb_pkey x;
    x.v = gb_ord<double>::key(Cv[p]);
    x.i = (long long)Cj[p];
    gb_pinsert<KMAX>(L, cnt, kk, x);
  }
  for (int e = lane; e < E; e += 32) {
    const long long idx = Ei[w * (long long)E + e];
    if (idx < 0) continue;
    gb_pkey x;
    x.v = gb_ord<double>::key(Ev[w * (long long)E + e]);
    x.i = idx;
    gb_pinsert<KMAX>(L, cnt, kk, x);
  }
  int head = 0;
  for (int s = 0; s < kk; ++s) {
    unsigned long long v = 0xffffffffffffffffull;
    long long i = 0x7fffffffffffffffll;
    if (head < cnt) { v = L[head].v; i = L[head].i; }
    int src = lane;
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) {
      const unsigned long long v2 = __shfl_xor_sync(0xffffffffu, v, off);
      const long long i2 = __shfl_xor_sync(0xffffffffu, i, off);
      const int s2 = __shfl_xor_sync(0xffffffffu, src, off);
      if (v2 < v || (v2 == v && (i2 < i || (i2 == i && s2 < src)))) { v = v2; i = i2; src = s2; }
    }
    if (src == lane && head < cnt) ++head;
    if (lane == 0) {
      const long long o = w * (long long)kk + s;
      if (i == 0x7fffffffffffffffll) {
        out_d[o] = __longlong_as_double(0x7ff8000000000000ll);
        out_i[o] = i;
      } else {
        // back from the image: the value itself is read again from its key's inverse
        const unsigned long long u = (v >> 63) ? (v & 0x7fffffffffffffffull) : ~v;
        out_d[o] = v == 0xffffffffffffffffull ? __longlong_as_double(0x7ff8000000000000ll)
                                              : __longlong_as_double((long long)u);
        out_i[o] = i;
      }
    }
  }
}

#endif  // GB_PRUNED_CUH
