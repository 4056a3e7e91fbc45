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
template <class Spec, typename I>
__global__ void __launch_bounds__(512)
gb_union_sorted(const I* __restrict__ aptr, const I* __restrict__ aidx,
                const typename Spec::T* __restrict__ aval, const I* __restrict__ aperm,
                long long n_left,
                const I* __restrict__ bptr, const I* __restrict__ bidx,
                const typename Spec::T* __restrict__ bval, const I* __restrict__ bperm,
                const I* __restrict__ btidx, const typename Spec::T* __restrict__ btval,
                const I* __restrict__ tptr, int ntiles, long long J, long long n_right, long long K,
                typename Spec::T* __restrict__ out,
                const typename Spec::A* __restrict__ colred, const typename Spec::A* __restrict__ rowred) {
  typedef typename Spec::T T;
  typedef typename Spec::A A;
  extern __shared__ __align__(16) unsigned char gb_smem[];
  A* acc = reinterpret_cast<A*>(gb_smem);                           // J accumulators
  unsigned int* amask = reinterpret_cast<unsigned int*>(acc + J);   // K bits
  const long long i = blockIdx.x;
  const int t = blockIdx.y;
  const long long j0 = (long long)t * J;
  const long long width = (n_right - j0 < J) ? n_right - j0 : J;
  if (i >= n_left || width <= 0) return;
  const long long words = (K + 31) / 32;
  for (long long q = threadIdx.x; q < width; q += blockDim.x) acc[q] = Spec::union_identity();
  for (long long q = threadIdx.x; q < words; q += blockDim.x) amask[q] = 0u;
  __syncthreads();
  const I a0 = aptr[i], a1 = aptr[i + 1];
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
    const I q0 = tptr[k * (ntiles + 1) + t];
    const I q1 = tptr[k * (ntiles + 1) + t + 1];
    for (I q = q0 + (I)lane; q < q1; q += 32) Spec::union_scatter(acc, (long long)btidx[q] - j0, a, btval[q]);
  }
  __syncthreads();
  for (long long q = threadIdx.x; q < width; q += blockDim.x) {
    const long long j = j0 + q;
    A v = acc[q];
    const I b0 = bptr[j], b1 = bptr[j + 1];
    // A_i \ B_j: the first of A_i's entries (by L) whose column B_j does not store.
    for (I p = a0; p < a1; ++p) {
      const I e = aperm[p];
      const I pos = gb_lower_bound(bidx, b0, b1, (long long)aidx[e]);
      if (pos == b1 || bidx[pos] != aidx[e]) { v = Spec::union_combine(v, Spec::union_L(aval[e])); break; }
    }
    // B_j \ A_i: the first of B_j's entries (by R) whose column A_i does not store.
    for (I p = b0; p < b1; ++p) {
      const I e = bperm[p];
      const long long k = (long long)bidx[e];
      if (!((amask[k >> 5] >> (k & 31)) & 1u)) { v = Spec::union_combine(v, Spec::union_R(bval[e])); break; }
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
