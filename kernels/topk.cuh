// Device top-k selection for k-nearest neighbours (gbdist/backends/cuda/topk.py).
// Compiled by NVRTC (through CuPy) or nvcc; no system headers are included.
//
// Order: by distance, then by the lower column; NaN after every number (NumPy's
// sort order), -0.0 equal to +0.0. Each (distance, column) pair becomes one key
// (gb_tkey: an order-preserving unsigned image of the distance, then the
// column), so the order is total and the result does not depend on scheduling.
//
// gb_topk: a warp per row. The warp keeps the S best keys seen so far in shared
// memory (sorted ascending) and a threshold, the current k-th key. It scans
// its row 32 columns at a time; a lane whose key beats the threshold appends
// it to a 64-entry buffer (ballot + prefix count). When the buffer holds more
// than 32 keys it is bitonic-sorted and merged into the list (elementwise min
// against the reversed buffer gives a bitonic sequence holding the S smallest;
// a bitonic merge sorts it) and the threshold is re-read. Columns that cannot
// enter the top k cost one load, one key and one comparison.
//
// gb_topk_merge: a thread per row merges two sorted candidate lists
// (distance, int64 index), keeping the k best in the same order.

#ifndef GB_TOPK_CUH
#define GB_TOPK_CUH

template <typename T> struct gb_ord;

template <> struct gb_ord<float> {
  typedef unsigned int H;
  static __device__ __forceinline__ H key(float v) {
    if (v != v) return 0xffffffffu;  // every NaN: after +inf
    unsigned int u = __float_as_uint(v);
    if (v == 0.0f) u = 0u;           // -0.0 == +0.0
    return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
  }
  static __device__ __forceinline__ H max_key() { return 0xffffffffu; }
};

template <> struct gb_ord<double> {
  typedef unsigned long long H;
  static __device__ __forceinline__ H key(double v) {
    if (v != v) return 0xffffffffffffffffull;
    unsigned long long u = (unsigned long long)__double_as_longlong(v);
    if (v == 0.0) u = 0ull;
    return (u >> 63) ? ~u : (u | 0x8000000000000000ull);
  }
  static __device__ __forceinline__ H max_key() { return 0xffffffffffffffffull; }
};

// (distance image, column). The padding key (max, 0xffffffff) sorts after any
// real key, NaN ones included (columns are < 2^32 - 1, checked on the host).
template <typename H> struct gb_tkey {
  H hi;
  unsigned int lo;
};

template <typename H>
__device__ __forceinline__ bool gb_tless(const gb_tkey<H>& a, const gb_tkey<H>& b) {
  return a.hi < b.hi || (a.hi == b.hi && a.lo < b.lo);
}

// Sort the buffer B (cnt keys, padded to 64) and merge it into the sorted list L.
template <typename H, int S>
__device__ __forceinline__ void gb_topk_flush(gb_tkey<H>* L, gb_tkey<H>* B, int cnt, int lane,
                                              const gb_tkey<H> pad) {
  typedef gb_tkey<H> K;
  for (int i = cnt + lane; i < 64; i += 32) B[i] = pad;
  __syncwarp();
#pragma unroll
  for (int size = 2; size <= 64; size <<= 1) {
#pragma unroll
    for (int stride = size >> 1; stride > 0; stride >>= 1) {
      const int i = 2 * lane - (lane & (stride - 1));
      const int j = i + stride;
      const bool asc = (i & size) == 0;
      const K a = B[i], b = B[j];
      if (asc ? gb_tless(b, a) : gb_tless(a, b)) { B[i] = b; B[j] = a; }
      __syncwarp();
    }
  }
  // L[i] = min(L[i], Bpad[S - 1 - i]): the S smallest of both, as a bitonic sequence.
#pragma unroll
  for (int i = lane; i < S; i += 32) {
    const int j = S - 1 - i;
    if (j < 64) {
      const K b = B[j];
      if (gb_tless(b, L[i])) L[i] = b;
    }
  }
  __syncwarp();
#pragma unroll
  for (int stride = S >> 1; stride > 0; stride >>= 1) {
#pragma unroll
    for (int p = lane; p < S / 2; p += 32) {
      const int i = 2 * p - (p & (stride - 1));
      const int j = i + stride;
      const K a = L[i], b = L[j];
      if (gb_tless(b, a)) { L[i] = b; L[j] = a; }
    }
    __syncwarp();
  }
}

// For each row of D (rows x width, row-major): the kk smallest entries by
// (distance, column), NaN last, written sorted to out_d / out_i (rows x kk);
// out_i = column + offset. k <= S is the rank the threshold tracks (kk <= k, kk <= width).
template <typename T, int S, int WARPS>
__global__ void __launch_bounds__(WARPS * 32)
gb_topk(const T* __restrict__ D, long long rows, long long width, int k, int kk, long long offset,
        T* __restrict__ out_d, long long* __restrict__ out_i) {
  typedef gb_ord<T> O;
  typedef typename O::H H;
  typedef gb_tkey<H> K;
  constexpr int U = 4;  // loads in flight per lane
  __shared__ K sL[WARPS][S];
  __shared__ K sB[WARPS][64];
  const int lane = threadIdx.x & 31;
  const int w = threadIdx.x >> 5;
  K* L = sL[w];
  K* B = sB[w];
  K pad;
  pad.hi = O::max_key();
  pad.lo = 0xffffffffu;
  const unsigned below = (1u << lane) - 1u;
  for (long long row = (long long)blockIdx.x * WARPS + w; row < rows;
       row += (long long)gridDim.x * WARPS) {
    for (int i = lane; i < S; i += 32) L[i] = pad;
    __syncwarp();
    K thr = pad;
    int cnt = 0;
    const T* __restrict__ r = D + row * width;
    for (long long c0 = 0; c0 < width; c0 += 32 * U) {
      T v[U];
#pragma unroll
      for (int u = 0; u < U; ++u) {
        const long long c = c0 + u * 32 + lane;
        v[u] = c < width ? r[c] : (T)0;
      }
#pragma unroll
      for (int u = 0; u < U; ++u) {
        const long long c = c0 + u * 32 + lane;
        K key;
        key.hi = O::key(v[u]);
        key.lo = (unsigned int)c;
        const bool take = c < width && gb_tless(key, thr);
        const unsigned mask = __ballot_sync(0xffffffffu, take);
        if (mask) {
          if (take) B[cnt + __popc(mask & below)] = key;
          cnt += __popc(mask);
          if (cnt > 32) {
            __syncwarp();
            gb_topk_flush<H, S>(L, B, cnt, lane, pad);
            cnt = 0;
            thr = L[k - 1];
          }
        }
      }
    }
    if (cnt > 0) {
      __syncwarp();
      gb_topk_flush<H, S>(L, B, cnt, lane, pad);
    }
    __syncwarp();
    for (int i = lane; i < kk; i += 32) {
      const unsigned int c = L[i].lo;
      out_i[row * kk + i] = (long long)c + offset;
      out_d[row * kk + i] = r[c];  // the stored value itself (-0.0 and NaN kept)
    }
    __syncwarp();
  }
}

// gb_topk_cols: the same selection down the COLUMNS of D (rows x width, row-major),
// read in place, where the symmetric search took a transposed copy of the tile first
// (2.06 of 3.57 ms of a 20,724 x 13,816 float32 tile's selection on an H200). A thread per
// (column, run of `chunk` rows): adjacent threads read adjacent columns of a row (one
// coalesced line a warp); each keeps the S best keys (distance, row) seen, sorted, in
// registers (an unrolled insertion; a key that cannot enter costs one comparison) and
// writes its run's kk best to part (width x runs x kk: a column's runs one after another),
// values as stored and rows local to D. Every run holds at least kk rows (runs of
// `chunk` >= kk rows, the last one to the end), so there is no padding. Within a column, the position in part
// orders equal keys as their rows do (runs in row order, each sorted by (distance, row)),
// so gb_topk over part's rows (width rows of runs * kk) selects by (distance, row).
// Key (hi, lo) into the sorted register list L (S keys) when it beats the last.
template <typename H, int S>
__device__ __forceinline__ void gb_cols_insert(gb_tkey<H>* L, H hi, unsigned int lo) {
  gb_tkey<H> key;
  key.hi = hi;
  key.lo = lo;
  if (!gb_tless(key, L[S - 1])) return;
#pragma unroll
  for (int j = S - 1; j > 0; --j) {
    const bool shift = gb_tless(key, L[j - 1]);
    const bool here = !shift && gb_tless(key, L[j]);
    L[j] = shift ? L[j - 1] : (here ? key : L[j]);
  }
  if (gb_tless(key, L[0])) L[0] = key;
}

template <typename T, int S>
__global__ void __launch_bounds__(128)
gb_topk_cols(const T* __restrict__ D, long long rows, long long width, int kk, long long chunk,
             T* __restrict__ part_d, int* __restrict__ part_r) {
  typedef gb_ord<T> O;
  typedef typename O::H H;
  typedef gb_tkey<H> K;
  const long long c = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  const long long run = blockIdx.y;
  const long long runs = gridDim.y;
  if (c >= width) return;
  const long long r0 = run * chunk;
  const long long r1 = run + 1 == runs ? rows : r0 + chunk;
  K L[S];
#pragma unroll
  for (int j = 0; j < S; ++j) { L[j].hi = O::max_key(); L[j].lo = 0xffffffffu; }
  constexpr int U = 4;  // loads in flight per thread
  long long r = r0;
  for (; r + U <= r1; r += U) {
    T v[U];
#pragma unroll
    for (int u = 0; u < U; ++u) v[u] = D[(r + u) * width + c];
#pragma unroll
    for (int u = 0; u < U; ++u) gb_cols_insert<H, S>(L, O::key(v[u]), (unsigned int)(r + u));
  }
  for (; r < r1; ++r) gb_cols_insert<H, S>(L, O::key(D[r * width + c]), (unsigned int)r);
  const long long base = (c * runs + run) * kk;
#pragma unroll
  for (int j = 0; j < S; ++j) {
    if (j < kk) {
      const unsigned int r = L[j].lo;
      part_r[base + j] = (int)r;
      part_d[base + j] = D[(long long)r * width + c];  // the stored value (-0.0, NaN kept)
    }
  }
}

// gb_transpose: dst (cols x rows, row-major) = the transpose of src (rows x cols, row
// stride ld >= cols), moved as raw words W (4 or 8 bytes: the values' bits, -0.0 and NaN
// payloads kept). A 256-thread block moves a 32 x 32 tile through shared memory (one padding
// column: the column reads hit 32 banks), so both the reads of src's rows and the writes of
// dst's rows are coalesced; CuPy's strided copy of D.T wrote one word per thread from
// scattered reads (2.06 ms of a 20,724 x 13,816 float32 tile on an H200, 1.1 TB/s). The grid's
// y covers at most 65,535 row tiles; the blocks step over the rest.
template <typename W>
__global__ void __launch_bounds__(256)
gb_transpose(const W* __restrict__ src, long long rows, long long cols, long long ld,
             W* __restrict__ dst) {
  __shared__ W tile[32][33];
  const int tx = threadIdx.x & 31, ty = threadIdx.x >> 5;
  const long long c0 = (long long)blockIdx.x * 32;
  for (long long r0 = (long long)blockIdx.y * 32; r0 < rows; r0 += (long long)gridDim.y * 32) {
#pragma unroll
    for (int j = ty; j < 32; j += 8) {
      const long long r = r0 + j, c = c0 + tx;
      if (r < rows && c < cols) tile[j][tx] = src[r * ld + c];
    }
    __syncthreads();
#pragma unroll
    for (int j = ty; j < 32; j += 8) {
      const long long c = c0 + j, r = r0 + tx;
      if (c < cols && r < rows) dst[c * rows + r] = tile[tx][j];
    }
    __syncthreads();
  }
}

// Merge two sorted candidate lists per row (a: ka per row, b: kb per row) into
// the k best (k <= ka + kb) by (distance, index), NaN last; a wins exact ties.
template <typename T>
__global__ void gb_topk_merge(const T* __restrict__ ad, const long long* __restrict__ ai, int ka,
                              const T* __restrict__ bd, const long long* __restrict__ bi, int kb,
                              long long rows, int k, T* __restrict__ od,
                              long long* __restrict__ oi) {
  typedef gb_ord<T> O;
  typedef typename O::H H;
  for (long long row = (long long)blockIdx.x * blockDim.x + threadIdx.x; row < rows;
       row += (long long)gridDim.x * blockDim.x) {
    const T* ra = ad + row * ka;
    const long long* rai = ai + row * ka;
    const T* rb = bd + row * kb;
    const long long* rbi = bi + row * kb;
    T* ro = od + row * k;
    long long* roi = oi + row * k;
    int pa = 0, pb = 0;
    for (int o = 0; o < k; ++o) {
      bool take_a;
      if (pa >= ka) {
        take_a = false;
      } else if (pb >= kb) {
        take_a = true;
      } else {
        const H ha = O::key(ra[pa]), hb = O::key(rb[pb]);
        take_a = ha < hb || (ha == hb && rai[pa] <= rbi[pb]);
      }
      if (take_a) {
        ro[o] = ra[pa];
        roi[o] = rai[pa];
        ++pa;
      } else {
        ro[o] = rb[pb];
        roi[o] = rbi[pb];
        ++pb;
      }
    }
  }
}

#endif  // GB_TOPK_CUH
