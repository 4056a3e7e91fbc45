// Sorted union: a two-pass union for max/min ⊕ with work proportional to the
// pairs sharing a column (plus the m×n output), for very sparse operands.
//
// For ⊕ = max (min: mirrored, entries sorted ascending):
//   ⊕_{k ∈ A_i ∪ B_j} f = max( max_{k ∈ A_i ∩ B_j} f(a, b),
//                               max_{k ∈ A_i \ B_j} L(a),     L(x) = f(x, fill)
//                               max_{k ∈ B_j \ A_i} R(b) )    R(y) = f(fill, y)
// The ∩ term is a scatter pass (atomic ⊕ into the shared-memory tile). For the
// A \ B term, A_i's entries are visited in descending L order (aperm): the
// first whose column B_j lacks (binary search in B_j) gives the maximum. For
// B \ A, B_j's entries in descending R order (bperm): the first whose column
// is not in A_i's bitmask (shared memory) gives it. Both walks usually stop
// after a step or two.
// Most pairs need no walk (GB_UNION_TOP = T, the first T entries of each row in key order):
//  * A \ B: while the ∩ scatter walks A_i's entry of rank r < T, it sets bit r of flags[j]
//    for every B_j of the tile storing that column; the first rank whose bit is unset gives
//    the maximum (A_i's value there, the same for every j of the block). Only when B_j
//    stores all of A_i's first T columns does the binary-search walk run, from rank T;
//  * B \ A: B_j's first T entries by R come from a table, rank-major (topc, topv: column and
//    value, column -1 past the row's end), so the threads of a block read consecutive
//    words; the walk through bperm runs only when A_i stores all T columns.
// upper (a diagonal tile of a self-join under a metric proven symmetric): only j >= i, as
// in gb_scatter (each column's walk from its first j >= i, the cells below left for the
// caller's gb_mirror_lower).
// (A pair's walks read B_j's row in global memory, one row per thread: 2,048 query rows
// against the 283K-row power law took 66 ms there against the scatter's 8.)
#ifndef GB_UNION_TOP
#define GB_UNION_TOP 4
#endif
template <class Spec, typename I>
__global__ void __launch_bounds__(512)
gb_union_sorted(const I* __restrict__ aptr, const I* __restrict__ aidx,
                const typename Spec::T* __restrict__ aval, const I* __restrict__ aperm,
                long long n_left,
                const I* __restrict__ bptr, const I* __restrict__ bidx,
                const typename Spec::T* __restrict__ bval, const I* __restrict__ bperm,
                const I* __restrict__ topc, const typename Spec::T* __restrict__ topv,
                const I* __restrict__ btidx, const typename Spec::T* __restrict__ btval,
                const I* __restrict__ tptr, int ntiles, long long J, long long n_right, long long K,
                typename Spec::T* __restrict__ out,
                const typename Spec::A* __restrict__ colred, const typename Spec::A* __restrict__ rowred,
                int upper) {
  typedef typename Spec::T T;
  typedef typename Spec::A A;
  extern __shared__ __align__(16) unsigned char gb_smem[];
  A* acc = reinterpret_cast<A*>(gb_smem);                           // J accumulators
  unsigned int* amask = reinterpret_cast<unsigned int*>(acc + J);   // K bits
  const long long words = (K + 31) / 32;
  unsigned int* flags = amask + words;                              // J bytes: ranks < T shared
  const long long i = blockIdx.x;
  const int t = blockIdx.y;
  const long long j0 = (long long)t * J;
  const long long width = (n_right - j0 < J) ? n_right - j0 : J;
  if (i >= n_left || width <= 0) return;
  if (upper && j0 + width <= i) return;  // the whole tile lies below the diagonal
  const long long first = (upper && i > j0) ? i - j0 : 0;  // the tile's first cell written
  const long long fwords = (J + 3) / 4;
  for (long long q = threadIdx.x; q < width; q += blockDim.x) acc[q] = Spec::union_identity();
  for (long long q = threadIdx.x; q < words; q += blockDim.x) amask[q] = 0u;
  for (long long q = threadIdx.x; q < fwords; q += blockDim.x) flags[q] = 0u;
  __syncthreads();
  const I a0 = aptr[i], a1 = aptr[i + 1];
  const int na = (a1 - a0 < (I)GB_UNION_TOP) ? (int)(a1 - a0) : GB_UNION_TOP;
  I tpos[GB_UNION_TOP];  // the positions of A_i's first T entries by L
#pragma unroll
  for (int r = 0; r < GB_UNION_TOP; ++r) tpos[r] = (r < na) ? aperm[a0 + r] : (I)-1;
  for (I p = a0 + (I)threadIdx.x; p < a1; p += (I)blockDim.x) {
    const long long k = (long long)aidx[p];
    atomicOr(&amask[k >> 5], 1u << (k & 31));
  }
  const int lane = threadIdx.x & 31;
  const int warp = threadIdx.x >> 5;
  const int nwarps = blockDim.x >> 5;
  for (I p = a0 + (I)warp; p < a1; p += (I)nwarps) {
    const long long k = (long long)aidx[p];
    const T a = aval[p];
    int rank = -1;
#pragma unroll
    for (int r = 0; r < GB_UNION_TOP; ++r) rank = (tpos[r] == p) ? r : rank;
    I q0 = tptr[k * (ntiles + 1) + t];
    const I q1 = tptr[k * (ntiles + 1) + t + 1];
    if (first > 0) q0 = gb_lower_bound(btidx, q0, q1, i);  // column k's first j >= i
    for (I q = q0 + (I)lane; q < q1; q += 32) {
      const long long jj = (long long)btidx[q] - j0;
      Spec::union_scatter(acc, jj, a, btval[q]);
      if (rank >= 0) atomicOr(&flags[jj >> 2], (1u << rank) << (8 * (int)(jj & 3)));
    }
  }
  __syncthreads();
  for (long long q = first + threadIdx.x; q < width; q += blockDim.x) {
    const long long j = j0 + q;
    A v = acc[q];
    const unsigned int f = (flags[q >> 2] >> (8 * (int)(q & 3))) & 0xFFu;
    // A_i \ B_j: the first of A_i's entries (by L) whose column B_j does not store.
    int r = 0;
    while (r < na && ((f >> r) & 1u)) ++r;
    if (r < na) {
      v = Spec::union_combine(v, Spec::union_L(aval[tpos[r]]));
    } else if (a1 - a0 > (I)GB_UNION_TOP) {
      const I b0 = bptr[j], b1 = bptr[j + 1];
      for (I p = a0 + (I)GB_UNION_TOP; p < a1; ++p) {
        const I e = aperm[p];
        const I pos = gb_lower_bound(bidx, b0, b1, (long long)aidx[e]);
        if (pos == b1 || bidx[pos] != aidx[e]) { v = Spec::union_combine(v, Spec::union_L(aval[e])); break; }
      }
    }
    // B_j \ A_i: the first of B_j's entries (by R) whose column A_i does not store.
    bool found = false, ended = false;
#pragma unroll
    for (int s = 0; s < GB_UNION_TOP; ++s) {
      if (found || ended) continue;
      const long long k = (long long)topc[(long long)s * n_right + j];
      if (k < 0) { ended = true; continue; }
      if (!((amask[k >> 5] >> (k & 31)) & 1u)) {
        v = Spec::union_combine(v, Spec::union_R(topv[(long long)s * n_right + j]));
        found = true;
      }
    }
    if (!found && !ended) {
      const I b1 = bptr[j + 1];
      for (I p = bptr[j] + (I)GB_UNION_TOP; p < b1; ++p) {
        const I e = bperm[p];
        const long long k = (long long)bidx[e];
        if (!((amask[k >> 5] >> (k & 31)) & 1u)) { v = Spec::union_combine(v, Spec::union_R(bval[e])); break; }
      }
    }
    A vals[Spec::NACC];
    vals[0] = v;
    out[i * n_right + j] = (T)Spec::epilogue(vals, i, j, n_left, n_right, colred, rowred, K);
  }
}

// out[p] = Map::map(val[p]): the sort keys of the sorted union (L or R per entry).
template <class Map>
__global__ void gb_map_values(const typename Map::T* __restrict__ val, long long n,
                              typename Map::A* __restrict__ out) {
  for (long long p = (long long)blockIdx.x * blockDim.x + threadIdx.x; p < n;
       p += (long long)gridDim.x * blockDim.x)
    out[p] = Map::map(val[p]);
}
