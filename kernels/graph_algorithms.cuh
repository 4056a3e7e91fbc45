// Whole-algorithm kernels (issue 30), functor-free: connected components by concurrent
// union-find, the fused PageRank update, and the degree-ordered lower triangle for
// triangle counting. Compiled as one module by gbdist/backends/cuda/graph_algorithms.py.
//
// Connected components (after ECL-CC, Jaiganesh & Burtscher, HPDC'18; written for gbdist).
// parent[v] is a vertex of v's component with parent[v] <= v; roots have parent[r] == r.
// Hooking always puts the larger root under the smaller one with an atomicCAS on the
// root's own slot, so a root stays a root until the CAS that hooks it, a non-root never
// becomes a root again, and each tree's root ends up being the smallest vertex of its
// component: the label gbdist returns, with no relabelling. Finds halve the path as they
// go (parent[x] = its grandparent: a plain store of an ancestor, safe beside other
// threads' stores). Reads go through L2 (__ldcg): another SM's hook is seen, not a stale
// L1 line.
//   gb_cc_init:  parent[v] = the first stored neighbour of v when it is smaller, else v;
//   gb_cc_hook:  for every stored entry (v, u) (u < v only, when `half`: a symmetric
//                pattern holds every edge twice), union(v, u) — rows binned by degree as
//                the SpMV's (1, 4, 16, 32 lanes, a 256-thread block), one launch;
//   gb_cc_label: label[v] = the root of v (int64).

template <typename V>
__device__ __forceinline__ V gb_cc_find(V* parent, V v) {
  V p = __ldcg(parent + v);
  while (p != v) {
    const V g = __ldcg(parent + p);
    if (g == p) return p;
    parent[v] = g;  // path halving: v skips to its grandparent, an ancestor
    v = g;
    p = __ldcg(parent + v);
  }
  return v;
}

template <typename V>
__device__ __forceinline__ V gb_cc_cas(V* a, V expected, V desired) {
  if constexpr (sizeof(V) == 4) {
    return (V)atomicCAS((int*)a, (int)expected, (int)desired);
  } else {
    return (V)atomicCAS((unsigned long long*)a, (unsigned long long)expected,
                        (unsigned long long)desired);
  }
}

// Join the trees of root-or-vertex `a` and vertex `b`; returns a root (at the time) of the
// joined tree, a hint for the next edge of the same row.
template <typename V>
__device__ __forceinline__ V gb_cc_union(V* parent, V a, V b) {
  a = gb_cc_find(parent, a);
  b = gb_cc_find(parent, b);
  while (a != b) {
    if (a < b) { const V t = a; a = b; b = t; }  // a > b: hook a under b
    const V old = gb_cc_cas(parent + a, a, b);
    if (old == a) return b;
    a = gb_cc_find(parent, old);  // a was hooked meanwhile: go on from its new root
  }
  return a;
}

template <typename I, typename V>
__global__ void __launch_bounds__(256) gb_cc_init(const I* __restrict__ Ap, const I* __restrict__ Aj,
                                                  long long n, V* __restrict__ parent) {
  const long long v = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (v >= n) return;
  V p = (V)v;
  if (Ap[v + 1] > Ap[v]) {
    const long long u = (long long)Aj[Ap[v]];
    if (u < v) p = (V)u;
  }
  parent[v] = p;
}

template <typename I, typename V>
__device__ __forceinline__ void gb_cc_row(long long row, int lane, int G, const I* __restrict__ Ap,
                                          const I* __restrict__ Aj, V* parent, bool half) {
  const V v = (V)row;
  V r = v;
  const long long end = (long long)Ap[row + 1];
  for (long long p = (long long)Ap[row] + lane; p < end; p += G) {
    const V u = (V)Aj[p];
    if (half && u >= v) break;  // sorted rows: the rest are above v too
    if (u != v) r = gb_cc_union(parent, r, u);
  }
}

template <int G, typename I, typename V>
__device__ __forceinline__ void gb_cc_group(const long long* __restrict__ rows, long long r0,
    long long nrows, long long block, const I* __restrict__ Ap, const I* __restrict__ Aj,
    V* parent, bool half) {
  const long long tid = block * 256 + threadIdx.x;
  const long long r = tid / G;
  if (r < nrows) gb_cc_row<I, V>(rows[r0 + r], (int)(tid % G), G, Ap, Aj, parent, half);
}

// rows/meta: the SpMV's degree bins (gbdist/backends/cuda/graph.py, _spmv_bins): meta[b]
// the bins' first rows, meta[NB + 1 + b] their first blocks.
template <typename I, typename V>
__global__ void __launch_bounds__(256) gb_cc_hook(const long long* __restrict__ rows,
    const long long* __restrict__ meta, const I* __restrict__ Ap, const I* __restrict__ Aj,
    V* parent, int half) {
  constexpr int NB = 5;
  const long long blk = blockIdx.x;
  int b = 0;
#pragma unroll
  for (int q = 1; q < NB; ++q) b += blk >= meta[NB + 1 + q] ? 1 : 0;
  const long long r0 = meta[b], nrows = meta[b + 1] - meta[b], block = blk - meta[NB + 1 + b];
  switch (b) {
    case 0: gb_cc_group<1, I, V>(rows, r0, nrows, block, Ap, Aj, parent, half != 0); return;
    case 1: gb_cc_group<4, I, V>(rows, r0, nrows, block, Ap, Aj, parent, half != 0); return;
    case 2: gb_cc_group<16, I, V>(rows, r0, nrows, block, Ap, Aj, parent, half != 0); return;
    case 3: gb_cc_group<32, I, V>(rows, r0, nrows, block, Ap, Aj, parent, half != 0); return;
    default: break;
  }
  gb_cc_row<I, V>(rows[r0 + block], threadIdx.x, 256, Ap, Aj, parent, half != 0);
}

template <typename V>
__global__ void __launch_bounds__(256) gb_cc_label(V* parent, long long n,
                                                   long long* __restrict__ label) {
  const long long v = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (v >= n) return;
  V r = (V)v, p = __ldcg(parent + r);
  while (p != r) { r = p; p = __ldcg(parent + r); }
  label[v] = (long long)r;
}

// PageRank, one power step fused after the SpMV y = Aᵀ w (gbdist/algorithms/pagerank.py):
//   new(i) = ((1 - α) / n + α · lost_t / n) + α · y(i)        (the operations' order)
//   err_t  = Σ |new(i) - x(i)|
//   w(i)   = new(i) · inv_s(i)       (0 for dangling vertices: their rank is `lost`)
//   lost_{t+1} = Σ over dangling i of new(i)
// scal[2t] = lost_t (read), scal[2t + 1] = err_t, scal[2t + 2] = lost_{t+1} (written).
// Deterministic sums: each block writes its partials, the last block to finish adds them
// in a fixed order (no floating-point atomics: the same answer every run): thread j the
// partials j, j + 256, ... in turn, then the warps' fixed shuffle tree and the 8 warps in
// order. (One thread adding the ~4,000 partials in turn took 178 of the kernel's µs at
// 10^6 vertices on an H200: a chain of dependent L2 reads.)
extern "C" __global__ void __launch_bounds__(256) gb_rank_update(
    const double* __restrict__ y, const double* __restrict__ x, double* __restrict__ xnew,
    const double* __restrict__ inv_s, const unsigned char* __restrict__ dangling,
    double* __restrict__ w, long long n, double alpha, double teleport, long long t,
    double* __restrict__ scal, double* __restrict__ partial, unsigned int* __restrict__ done) {
  __shared__ double serr[8], slost[8];
  __shared__ bool last;
  const double lost = scal[2 * t];
  const double base = teleport + alpha * lost / (double)n;
  double e = 0.0, l = 0.0;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += (long long)gridDim.x * blockDim.x) {
    const double v = base + y[i] * alpha;
    e += fabs(v - x[i]);
    xnew[i] = v;
    w[i] = v * inv_s[i];
    if (dangling[i]) l += v;
  }
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) {
    e += __shfl_xor_sync(0xffffffffu, e, off);
    l += __shfl_xor_sync(0xffffffffu, l, off);
  }
  if ((threadIdx.x & 31) == 0) { serr[threadIdx.x >> 5] = e; slost[threadIdx.x >> 5] = l; }
  __syncthreads();
  if (threadIdx.x == 0) {
    double be = 0.0, bl = 0.0;
    for (int q = 0; q < 8; ++q) { be += serr[q]; bl += slost[q]; }
    partial[2 * blockIdx.x] = be;
    partial[2 * blockIdx.x + 1] = bl;
    __threadfence();
    last = atomicAdd(done, 1u) == gridDim.x - 1;
  }
  __syncthreads();  // also: thread 0 has read serr / slost before the last block reuses them
  if (!last) return;
  double te = 0.0, tl = 0.0;
  for (unsigned int q = threadIdx.x; q < gridDim.x; q += blockDim.x) {
    te += __ldcg(partial + 2 * q);
    tl += __ldcg(partial + 2 * q + 1);
  }
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) {
    te += __shfl_xor_sync(0xffffffffu, te, off);
    tl += __shfl_xor_sync(0xffffffffu, tl, off);
  }
  if ((threadIdx.x & 31) == 0) { serr[threadIdx.x >> 5] = te; slost[threadIdx.x >> 5] = tl; }
  __syncthreads();
  if (threadIdx.x == 0) {
    double ae = 0.0, al = 0.0;
    for (int q = 0; q < 8; ++q) { ae += serr[q]; al += slost[q]; }
    scal[2 * t + 1] = ae;
    scal[2 * t + 2] = al;
    *done = 0u;  // ready for the next step
  }
}

// Triangle counting's L (gbdist/algorithms/triangles.py, `lower`; the kernel set's
// rank_lower_counts / rank_lower_fill): entry (v, u) of the symmetric pattern is kept when u
// ranks below v — mode 0: u < v; mode 1 (increasing degree): deg u < deg v, ties by index;
// mode 2 (decreasing degree): deg u > deg v, ties by index. A self loop ranks below nothing.
// `deg` is the caller's degree of every vertex (its row length). A warp per row;
// gb_tri_count counts the kept entries of each row (count[mode * n + v], by ballots) for modes
// 0 .. modes - 1 (modes 1: the index order only, no degree read; 3: all three);
// gb_tri_fill writes one mode's kept columns in their order at Lp[v] (Q: L's row-pointer
// type), and their positions in A (for the values, gathered by the caller) when `pos` is
// not null. P: A's row-pointer
// type, J: its column type (L's columns are written in it), D: the degrees' and the
// counts' type (int where they fit: every entry reads its column's degree at random, and
// 4-byte degrees of 10^7 vertices stay in an H200's L2 where 8-byte ones did not).
__device__ __forceinline__ bool gb_tri_keep(int mode, long long v, long long u, long long dv,
                                            long long du) {
  if (mode == 0) return u < v;
  const bool tie = dv == du && u < v;
  return mode == 1 ? (du < dv || tie) : (du > dv || tie);
}

// G lanes a row (G divides 32): a warp holds 32 / G rows and runs as many rounds as its
// longest row needs (the warp's maximum, by shuffles), every lane in every ballot; a lane's
// group is its G bits of the ballot. Short rows (most of a power law's) then fill the lanes.
template <int G>
__device__ __forceinline__ unsigned gb_tri_group_mask() {
  return G == 32 ? 0xffffffffu : (((1u << G) - 1u) << ((threadIdx.x % 32) / G * G));
}

__device__ __forceinline__ long long gb_tri_warp_max(long long v) {
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) {
    const long long o = __shfl_xor_sync(0xffffffffu, v, off);
    v = o > v ? o : v;
  }
  return v;
}

template <typename P, typename J, typename D, int G>
__global__ void __launch_bounds__(256) gb_tri_count(const P* __restrict__ Ap, const J* __restrict__ Aj,
    const D* __restrict__ deg, long long n, int modes, D* __restrict__ count) {
  const long long tid = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if ((tid - (long long)(threadIdx.x % 32)) / G >= n) return;  // a whole warp past the rows
  const long long v = tid / G;
  const int lane = (int)(tid % G);
  const unsigned gm = gb_tri_group_mask<G>();
  long long a0 = 0, a1 = 0, dv = 0;
  if (v < n) {
    a0 = (long long)Ap[v]; a1 = (long long)Ap[v + 1];
    dv = modes > 1 ? (long long)deg[v] : 0;
  }
  const long long rounds = gb_tri_warp_max((a1 - a0 + G - 1) / G);
  long long c0 = 0, c1 = 0, c2 = 0;
  for (long long r = 0; r < rounds; ++r) {
    const long long p = a0 + r * G + lane;
    bool k0 = false, k1 = false, k2 = false;
    if (p < a1) {
      const long long u = (long long)Aj[p];
      k0 = u < v;
      if (modes > 1) {
        const long long du = (long long)deg[u];
        k1 = gb_tri_keep(1, v, u, dv, du);
        k2 = gb_tri_keep(2, v, u, dv, du);
      }
    }
    c0 += __popc(__ballot_sync(0xffffffffu, k0) & gm);
    if (modes > 1) {
      c1 += __popc(__ballot_sync(0xffffffffu, k1) & gm);
      c2 += __popc(__ballot_sync(0xffffffffu, k2) & gm);
    }
  }
  if (lane == 0 && v < n) {
    count[v] = (D)c0;
    if (modes > 1) { count[n + v] = (D)c1; count[2 * n + v] = (D)c2; }
  }
}

// gb_tri_sums: the device ordering rule's integers in one pass (triangles.device_sums): for
// modes 1 and 2 (count rows 1 and 2), with row = the count and col = deg - row: Σ col·row,
// Σ col², Σ row², Σ row, into out[0..8) (zeroed by the caller).
template <typename D>
__global__ void __launch_bounds__(256) gb_tri_sums(const D* __restrict__ deg, const D* __restrict__ count,
    long long n, unsigned long long* __restrict__ out) {
  unsigned long long s[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  for (long long v = (long long)blockIdx.x * 256 + threadIdx.x; v < n; v += (long long)gridDim.x * 256) {
    const unsigned long long d = (unsigned long long)deg[v];
#pragma unroll
    for (int m = 0; m < 2; ++m) {
      const unsigned long long r = (unsigned long long)count[(m + 1) * n + v];
      const unsigned long long c = d - r;
      s[4 * m] += c * r; s[4 * m + 1] += c * c; s[4 * m + 2] += r * r; s[4 * m + 3] += r;
    }
  }
#pragma unroll
  for (int i = 0; i < 8; ++i) {
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) s[i] += __shfl_xor_sync(0xffffffffu, s[i], off);
    if (threadIdx.x % 32 == 0 && s[i]) atomicAdd(out + i, s[i]);
  }
}

template <typename P, typename J, typename D, typename Q, int G>
__global__ void __launch_bounds__(256) gb_tri_fill(const P* __restrict__ Ap, const J* __restrict__ Aj,
    const D* __restrict__ deg, long long n, int mode, const Q* __restrict__ Lp,
    J* __restrict__ Lj, long long* __restrict__ pos) {
  const long long tid = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if ((tid - (long long)(threadIdx.x % 32)) / G >= n) return;  // a whole warp past the rows
  const long long v = tid / G;
  const int lane = (int)(tid % G);
  const unsigned gm = gb_tri_group_mask<G>();
  const unsigned below = gm & ((1u << (threadIdx.x % 32)) - 1u);  // the group's lanes before this one
  long long a0 = 0, a1 = 0, dv = 0, at = 0;
  if (v < n) {
    a0 = (long long)Ap[v]; a1 = (long long)Ap[v + 1];
    dv = mode ? (long long)deg[v] : 0;
    at = (long long)Lp[v];
  }
  const long long rounds = gb_tri_warp_max((a1 - a0 + G - 1) / G);
  for (long long r = 0; r < rounds; ++r) {
    const long long p = a0 + r * G + lane;
    bool k = false;
    long long u = 0;
    if (p < a1) {
      u = (long long)Aj[p];
      k = gb_tri_keep(mode, v, u, dv, mode ? (long long)deg[u] : 0);
    }
    const unsigned ballot = __ballot_sync(0xffffffffu, k);
    if (k) {
      const long long q = at + __popc(ballot & below);
      Lj[q] = (J)u;
      if (pos != nullptr) pos[q] = p;
    }
    at += __popc(ballot & gm);
  }
}

// Triangle count from L (gb_tri_fill's, any ranking): Σ over L's entries (v, u) of
// |L(v,:) ∩ L(u,:)| — the masked product C<L> = L·L summed, with no C. A warp a row v, a lane
// an entry u: each w of L(u,:) is looked up in the sorted L(v,:) by bisection. Under a degree
// ranking L's rows are short (the ranking's point), so the lanes' loops are too.
template <typename P>
__global__ void __launch_bounds__(256) gb_tri_intersect(const P* __restrict__ Lp,
    const int* __restrict__ Lj, long long n, unsigned long long* __restrict__ total) {
  const long long tid = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  const long long v = tid / 32;
  const int lane = (int)(tid % 32);
  if (v >= n) return;  // a whole warp
  const long long a0 = (long long)Lp[v], a1 = (long long)Lp[v + 1];
  unsigned long long c = 0;
  for (long long p = a0 + lane; p < a1; p += 32) {
    const long long u = (long long)Lj[p];
    const long long b1 = (long long)Lp[u + 1];
    for (long long q = (long long)Lp[u]; q < b1; ++q) {
      const int w = Lj[q];
      long long lo = a0, hi = a1;
      while (lo < hi) {
        const long long mid = (lo + hi) >> 1;
        if (Lj[mid] < w) lo = mid + 1; else hi = mid;
      }
      c += (lo < a1 && Lj[lo] == w) ? 1ull : 0ull;
    }
  }
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) c += __shfl_xor_sync(0xffffffffu, c, off);
  if (lane == 0 && c) atomicAdd(total, c);
}
