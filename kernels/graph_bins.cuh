// Row binning for the graph kernels (issue 12): bin each row by a key (a product bound, an
// exact count, a degree) against ascending edges, then gather the rows of each bin together,
// in ascending row order inside each bin (a stable counting sort: neighbouring threads then
// read neighbouring rows). Blocks of 256 threads; at most 31 edges.
//
// gb_bin_count: bin[i] = the first b with keys[i] <= edges[b], ne when above the last edge,
// -1 when skip_zero and keys[i] == 0; blockcounts[b * gridDim.x + block] = rows of bin b in
// the block.
// gb_bin_scatter: out[starts[b * gridDim.x + block] + (earlier rows of bin b in the block)] = i,
// starts being the exclusive prefix sums of blockcounts (bin-major): ends (their inclusive sums,
// scanned in place of the counts) less the block's own count of bin b, counted again here.
// gb_bin_tails: the bins' cumulative ends (ends[(b + 1) * nb - 1], b = 0 .. ne) and, after them,
// one more value (extra[0], 0 without it), gathered for the host's one read.

extern "C" __global__ void __launch_bounds__(256) gb_bin_count(
    const long long* __restrict__ keys, long long m, const long long* __restrict__ edges, int ne,
    int skip_zero, int* __restrict__ bin, long long* __restrict__ blockcounts) {
  __shared__ unsigned int local[32];
  for (int q = threadIdx.x; q <= ne; q += blockDim.x) local[q] = 0;
  __syncthreads();
  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < m) {
    const long long k = keys[i];
    int b = -1;
    if (!(skip_zero && k == 0)) {
      b = 0;
      while (b < ne && k > edges[b]) ++b;
      atomicAdd(&local[b], 1u);
    }
    bin[i] = b;
  }
  __syncthreads();
  for (int q = threadIdx.x; q <= ne; q += blockDim.x) {
    blockcounts[(long long)q * gridDim.x + blockIdx.x] = (long long)local[q];
  }
}

extern "C" __global__ void __launch_bounds__(256) gb_bin_scatter(
    const int* __restrict__ bin, long long m, int ne, const long long* __restrict__ ends,
    long long* __restrict__ out) {
  __shared__ unsigned int warpcount[8][32];  // rows of each bin in each warp of the block
  const int lane = threadIdx.x & 31;
  const int w = threadIdx.x >> 5;
  for (int q = lane; q <= ne; q += 32) warpcount[w][q] = 0;
  __syncwarp();
  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  const int b = i < m ? bin[i] : -1;
  const unsigned peers = __match_any_sync(0xffffffffu, b);
  const int rank = __popc(peers & ((1u << lane) - 1u));
  if (b >= 0 && rank == 0) warpcount[w][b] = __popc(peers);
  __syncthreads();
  if (b >= 0) {
    long long pos = ends[(long long)b * gridDim.x + blockIdx.x] + rank;
    for (int v = 0; v < 8; ++v) pos -= v < w ? 0 : warpcount[v][b];  // less this warp's and later
    out[pos] = i;
  }
}

extern "C" __global__ void gb_bin_tails(const long long* __restrict__ ends, long long nb, int ne,
                                        const long long* __restrict__ extra, long long* __restrict__ out) {
  for (int q = threadIdx.x; q <= ne + 1; q += blockDim.x)
    out[q] = q <= ne ? ends[(long long)(q + 1) * nb - 1] : (extra != nullptr ? extra[0] : 0);
}

// The smallest a and largest b over each group of g lanes (g a power of two <= 32), in
// every lane of the group.
__device__ __forceinline__ void gb_group_min_max(long long& a, long long& b, int g) {
  for (int off = g >> 1; off > 0; off >>= 1) {
    const long long a2 = __shfl_xor_sync(0xffffffffu, a, off), b2 = __shfl_xor_sync(0xffffffffu, b, off);
    a = a2 < a ? a2 : a;
    b = b2 > b ? b2 : b;
  }
}

// Each row's smallest and largest column (lo = n, hi = -1 when empty), g lanes a row (g a
// power of two <= 32, about the rows' mean length: a 7-entry row does not hold a warp), in
// any column order: the SpGEMM's bound by the columns a product row can reach
// (gb_spgemm_bound).
template <typename I>
__global__ void __launch_bounds__(256) gb_row_span(
    const I* __restrict__ Bp, const I* __restrict__ Bj, long long k, long long n,
    int* __restrict__ lo, int* __restrict__ hi, int g) {
  const long long tid = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  const long long row = tid / g;
  const int lane = (int)(tid % g);
  long long a = n, b = -1;
  if (row < k) {  // no early return: the whole warp shuffles
    const long long q1 = (long long)Bp[row + 1];
    for (long long q = (long long)Bp[row] + lane; q < q1; q += g) {
      const long long j = (long long)Bj[q];
      a = j < a ? j : a;
      b = j > b ? j : b;
    }
  }
  gb_group_min_max(a, b, g);
  if (row < k && lane == 0) { lo[row] = (int)a; hi[row] = (int)b; }
}

// SpGEMM row bounds: ub[i] = min(Σ over A(i,k) of deg_B(k), n, the columns between the
// smallest and the largest one of those B rows (lo/hi of gb_row_span; a band's product row
// is bounded by its width; blo null: no span), the mask row's size when Mp is not null) — g
// lanes a row. up (when not null, m + 1 values): up[i + 1] = ub[i] and up[0] = 0 as well, for
// the running sum's scan in place.
template <typename I>
__global__ void __launch_bounds__(256) gb_spgemm_bound(
    const I* __restrict__ Ap, const I* __restrict__ Aj, const I* __restrict__ Bp,
    const int* __restrict__ blo, const int* __restrict__ bhi,
    const I* __restrict__ Mp, long long m, long long n, long long* __restrict__ ub,
    long long* __restrict__ up, int g) {
  const long long tid = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  const long long row = tid / g;
  const int lane = (int)(tid % g);
  long long s = 0, a = n, b = -1;
  if (row < m) {  // no early return: the whole warp shuffles
    const long long a1 = (long long)Ap[row + 1];
    for (long long p = (long long)Ap[row] + lane; p < a1; p += g) {
      const long long k = (long long)Aj[p];
      s += (long long)Bp[k + 1] - (long long)Bp[k];
      if (blo != nullptr) {  // null: no span cut (a masked product: its mask row bounds it)
        const long long l = (long long)blo[k], h = (long long)bhi[k];
        a = l < a ? l : a;
        b = h > b ? h : b;
      }
    }
  }
  for (int off = g >> 1; off > 0; off >>= 1) s += __shfl_xor_sync(0xffffffffu, s, off);
  gb_group_min_max(a, b, g);
  if (row < m && lane == 0) {
    if (s > n) s = n;
    if (b >= a && s > b - a + 1) s = b - a + 1;
    if (Mp != nullptr) {
      const long long mm = (long long)Mp[row + 1] - (long long)Mp[row];
      if (s > mm) s = mm;
    }
    ub[row] = s;
    if (up != nullptr) {
      up[row + 1] = s;
      if (row == 0) up[0] = 0;
    }
  }
}

// The one-pass SpGEMM's compaction (issue 30): row i's entries (to[i + 1] - to[i], the
// result's row pointers) moved from from[i] (its place by its bound) to to[i], g lanes a row
// (no shuffle: rows past m leave); values moved as raw words V of their size.
template <typename V>
__global__ void __launch_bounds__(256) gb_compact_rows(
    const long long* __restrict__ from, const long long* __restrict__ to, long long m,
    const int* __restrict__ sj, const V* __restrict__ sx, int* __restrict__ dj,
    V* __restrict__ dx, int g) {
  const long long tid = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  const long long row = tid / g;
  const int lane = (int)(tid % g);
  if (row >= m) return;
  const long long a = from[row], b = to[row], c = to[row + 1] - b;
  for (long long p = lane; p < c; p += g) {
    dj[b + p] = sj[a + p];
    dx[b + p] = sx[a + p];
  }
}
