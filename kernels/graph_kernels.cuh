// Graph kernels (issue 12): row-binned hash SpGEMM, SpMV (pull), SpMSpV (push) and
// segment reductions over any semiring / monoid.
//
// Every kernel is a template over a functor struct F generated from the ops' formulas
// (gbdist/backends/cuda/graph_codegen.py):
//   typedef ... W;            // accumulator type (int for bool results)
//   typedef ... M;            // math type the formulas are evaluated in (double or float)
//   static M load(T v);       // an operand value: cast to the result's compute type, then M
//   KIND                      // 0 any other monoid (CAS loop), 1 plus, 2 min, 3 max, 4 any
//   static W mul(M x, M y);   // ⊗, result cast to W (bool: != 0)
//   static W add(W a, W b);   // ⊕
//   static W identity();      // ⊕'s identity in W
// Structural semantics: an output entry exists iff at least one ⊗ term exists for it.

// ---------------------------------------------------------------------------
// Bit casts and atomic ⊕ (shared or global memory)
// ---------------------------------------------------------------------------

template <typename T> struct gb_bits_of;
template <> struct gb_bits_of<int> { typedef unsigned int U; };
template <> struct gb_bits_of<float> { typedef unsigned int U; };
template <> struct gb_bits_of<long long> { typedef unsigned long long U; };
template <> struct gb_bits_of<double> { typedef unsigned long long U; };

template <typename T>
__device__ __forceinline__ typename gb_bits_of<T>::U gb_to_bits(T v) {
  union { T t; typename gb_bits_of<T>::U u; } c;
  c.t = v;
  return c.u;
}
template <typename T>
__device__ __forceinline__ T gb_from_bits(typename gb_bits_of<T>::U u) {
  union { T t; typename gb_bits_of<T>::U u; } c;
  c.u = u;
  return c.t;
}

template <class F>
__device__ __forceinline__ void gb_atomic_cas_combine(typename F::W* addr, typename F::W v) {
  typedef typename F::W W;
  typedef typename gb_bits_of<W>::U U;
  U* a = reinterpret_cast<U*>(addr);
  U old = *a, assumed;
  do {
    assumed = old;
    const U next = gb_to_bits<W>(F::add(gb_from_bits<W>(assumed), v));
    if (next == assumed) return;
    old = atomicCAS(a, assumed, next);
  } while (assumed != old);
}

__device__ __forceinline__ void gb_atomic_plus(int* a, int v) { atomicAdd(a, v); }
__device__ __forceinline__ void gb_atomic_plus(float* a, float v) { atomicAdd(a, v); }
__device__ __forceinline__ void gb_atomic_plus(double* a, double v) { atomicAdd(a, v); }
__device__ __forceinline__ void gb_atomic_plus(long long* a, long long v) {
  atomicAdd(reinterpret_cast<unsigned long long*>(a), (unsigned long long)v);
}

template <typename W> struct gb_is_int { static constexpr bool value = false; };
template <> struct gb_is_int<int> { static constexpr bool value = true; };
template <> struct gb_is_int<long long> { static constexpr bool value = true; };

// *addr = *addr ⊕ v, atomically.
template <class F>
__device__ __forceinline__ void gb_atomic_combine_g(typename F::W* addr, typename F::W v) {
  typedef typename F::W W;
  if constexpr (F::KIND == 1) {
    gb_atomic_plus(addr, v);
  } else if constexpr (F::KIND == 4) {
    *reinterpret_cast<volatile W*>(addr) = v;  // any: one of the values, whichever lands last
  } else if constexpr (F::KIND == 2 && gb_is_int<W>::value) {
    atomicMin(addr, v);
  } else if constexpr (F::KIND == 3 && gb_is_int<W>::value) {
    atomicMax(addr, v);
  } else {
    gb_atomic_cas_combine<F>(addr, v);
  }
}

// ---------------------------------------------------------------------------
// Hash tables: keys are column indices (int), -1 marks an empty slot; linear probing.
// ---------------------------------------------------------------------------

// The slot holding `col` (inserted if absent); fresh = whether this call inserted it.
// DENSE: the table has a slot per column of the result and `col` is its own slot (no probe).
template <bool DENSE = false>
__device__ __forceinline__ unsigned gb_hash_insert(int* keys, unsigned mask, int col, bool& fresh) {
  unsigned h = DENSE ? (unsigned)col : ((unsigned)col * 2654435761u) & mask;
  while (true) {
    const int old = atomicCAS(&keys[h], -1, col);
    if (old == -1) { fresh = true; return h; }
    if (old == col) { fresh = false; return h; }
    h = (h + 1) & mask;
  }
}

// Whether column `col` is stored in the (sorted) mask row [lo, hi).
template <typename I>
__device__ __forceinline__ bool gb_in_row(const I* __restrict__ idx, long long lo, long long hi, long long col) {
  while (lo < hi) {
    const long long mid = lo + (hi - lo) / 2;
    const long long v = (long long)idx[mid];
    if (v == col) return true;
    if (v < col) lo = mid + 1; else hi = mid;
  }
  return false;
}

// MASK: 0 none, 1 only (i, j) in the mask row, 2 only (i, j) NOT in the mask row.
template <int MASK, typename I>
__device__ __forceinline__ bool gb_allowed(const I* __restrict__ Mj, long long m0, long long m1, long long j) {
  if constexpr (MASK == 0) return true;
  else if constexpr (MASK == 1) return gb_in_row(Mj, m0, m1, j);
  else return !gb_in_row(Mj, m0, m1, j);
}

// Insert every product of row `row` of A·B into a table of `mask + 1` slots; the caller's
// group of T threads shares the table. Teams of TEAM lanes take one entry A(i,k) each and
// stride over row k of B. Returns how many keys this thread inserted first. DENSE: a slot
// per column (gb_hash_insert).
template <class F, int MASK, bool NUMERIC, int T, int TEAM, bool DENSE = false, typename I,
          typename TA, typename TB>
__device__ __forceinline__ long long gb_row_products(
    long long row, int t, int* keys, typename F::W* vals, unsigned mask,
    const I* __restrict__ Ap, const I* __restrict__ Aj, const TA* __restrict__ Ax,
    const I* __restrict__ Bp, const I* __restrict__ Bj, const TB* __restrict__ Bx,
    const I* __restrict__ Mp, const I* __restrict__ Mj) {
  typedef typename F::M M;
  long long m0 = 0, m1 = 0;
  if constexpr (MASK != 0) { m0 = (long long)Mp[row]; m1 = (long long)Mp[row + 1]; }
  long long fresh_count = 0;
  const long long a1 = (long long)Ap[row + 1];
  for (long long p = (long long)Ap[row] + t / TEAM; p < a1; p += T / TEAM) {
    const long long k = (long long)Aj[p];
    M av = (M)0;
    if constexpr (NUMERIC) av = F::load(Ax[p]);
    const long long b1 = (long long)Bp[k + 1];
    for (long long q = (long long)Bp[k] + t % TEAM; q < b1; q += TEAM) {
      const int j = (int)Bj[q];
      if (!gb_allowed<MASK>(Mj, m0, m1, (long long)j)) continue;
      bool fresh;
      const unsigned slot = gb_hash_insert<DENSE>(keys, mask, j, fresh);
      fresh_count += fresh ? 1 : 0;
      if constexpr (NUMERIC) gb_atomic_combine_g<F>(&vals[slot], F::mul(av, F::load(Bx[q])));
    }
  }
  return fresh_count;
}

// ---------------------------------------------------------------------------
// SpGEMM, rows whose table fits shared memory: S slots (a power of two, at least twice the
// row's bound, so linear probing stays short). WPR warps per row; RPB rows per block (RPB > 1
// only with WPR == 1, so that a row's threads are one warp and synchronise with __syncwarp).
// rows: the bin's row ids. The tables are dynamic shared memory: RPB * S * (4 + sizeof(W))
// bytes in the numeric pass (values first, for alignment), RPB * S * 4 in the symbolic pass.
// Symbolic (NUMERIC false): counts[row] += distinct columns.  Numeric: the row's entries
// written at Cp[row] in column order (gb_sorted_write) and counts[row] set to their number
// (the one-pass product: Cp[row] is then the row's place by its bound, compacted after).
// ---------------------------------------------------------------------------
template <int RPB>
__device__ __forceinline__ void gb_group_sync() {
  if constexpr (RPB == 1) __syncthreads(); else __syncwarp();
}

// Exclusive prefix sums of cnt[0, B) in place, by the T threads of one group; scratch: 32
// ints of the group. Ends with the group synchronised.
template <int T, int RPB>
__device__ __forceinline__ void gb_group_exclusive_scan(int* cnt, int B, int t, int* scratch) {
  const int per = (B + T - 1) / T;
  const int lo = t * per < B ? t * per : B;
  const int hi = lo + per < B ? lo + per : B;
  int local = 0;
  for (int i = lo; i < hi; ++i) local += cnt[i];
  const int lane = t & 31;
  int x = local;
#pragma unroll
  for (int o = 1; o < 32; o <<= 1) {
    const int y = __shfl_up_sync(0xffffffffu, x, o);
    if (lane >= o) x += y;
  }
  if constexpr (T > 32) {
    const int warp = t >> 5;
    if (lane == 31) scratch[warp] = x;
    gb_group_sync<RPB>();
    if (warp == 0) {
      int w = lane < T / 32 ? scratch[lane] : 0;
#pragma unroll
      for (int o = 1; o < 32; o <<= 1) {
        const int y = __shfl_up_sync(0xffffffffu, w, o);
        if (lane >= o) w += y;
      }
      if (lane < T / 32) scratch[lane] = w;
    }
    gb_group_sync<RPB>();
    if (warp > 0) x += scratch[warp - 1];
  }
  int run = x - local;
  for (int i = lo; i < hi; ++i) {
    const int v = cnt[i];
    cnt[i] = run;
    run += v;
  }
  gb_group_sync<RPB>();
}

// The numeric pass's ending: the table's entries (keys[s] >= 0) sorted by column and written
// at C[base ...]. A bucket sort: entries compacted to the front (through registers), each
// put in one of S / 2 buckets by its place between the row's smallest and largest column,
// bucket counts scanned, entries staged bucket by bucket, and each entry's rank = its
// bucket's start + the smaller keys in its bucket (about one on spread-out rows; at worst
// the whole row, on rows whose columns crowd together). O(S / T) work a thread and ten
// group synchronisations, where a sorting network over the table costs O(S log² S / T).
template <int S, int T, int RPB, typename W>
__device__ __forceinline__ void gb_sorted_write(int* keys, W* vals, int* scr, int t, long long base,
                                                int* __restrict__ Cj, W* __restrict__ Cx) {
  constexpr int PER = S / T;       // table slots a thread reads
  constexpr int B = S / 2;         // buckets; a row of this bin has at most S / 2 entries
  constexpr int PE = (B + T - 1) / T;  // compacted entries a thread holds
  int rk[PER];
  W rv[PER];
  int lo_c = 0x7fffffff, hi_c = -1;
#pragma unroll
  for (int u = 0; u < PER; ++u) {
    rk[u] = keys[t + u * T];
    rv[u] = vals[t + u * T];
    if (rk[u] >= 0) { lo_c = rk[u] < lo_c ? rk[u] : lo_c; hi_c = rk[u] > hi_c ? rk[u] : hi_c; }
  }
  if (hi_c >= 0) { atomicMin(&scr[33], lo_c); atomicMax(&scr[34], hi_c); }
  gb_group_sync<RPB>();  // every slot read: the table may be overwritten
#pragma unroll
  for (int u = 0; u < PER; ++u) {
    if (rk[u] >= 0) {
      const int p = atomicAdd(&scr[32], 1);
      keys[p] = rk[u];
      vals[p] = rv[u];
    }
  }
  gb_group_sync<RPB>();
  const int c = scr[32];
  const int cmin = scr[33];
  const long long span = (long long)scr[34] - cmin + 1;
  int ek[PE], eb[PE], ea[PE];
  W ev[PE];
#pragma unroll
  for (int u = 0; u < PE; ++u) {
    const int i = t + u * T;
    eb[u] = -1;
    if (i < c) {
      ek[u] = keys[i];
      ev[u] = vals[i];
      eb[u] = (int)(((long long)(ek[u] - cmin) * B) / span);
    }
  }
  gb_group_sync<RPB>();  // compacted entries are in registers
  int* cnt = keys;        // B bucket counters, then starts
  int* stage = keys + B;  // the keys, bucket by bucket
  for (int i = t; i < B; i += T) cnt[i] = 0;
  gb_group_sync<RPB>();
#pragma unroll
  for (int u = 0; u < PE; ++u) if (eb[u] >= 0) ea[u] = atomicAdd(&cnt[eb[u]], 1);
  gb_group_sync<RPB>();
  gb_group_exclusive_scan<T, RPB>(cnt, B, t, scr);
#pragma unroll
  for (int u = 0; u < PE; ++u) if (eb[u] >= 0) stage[cnt[eb[u]] + ea[u]] = ek[u];
  gb_group_sync<RPB>();
  int rank[PE];
#pragma unroll
  for (int u = 0; u < PE; ++u) {
    rank[u] = 0;
    if (eb[u] < 0) continue;
    const int s0 = cnt[eb[u]];
    const int s1 = eb[u] + 1 < B ? cnt[eb[u] + 1] : c;
    int r = s0;
    for (int p = s0; p < s1; ++p) r += stage[p] < ek[u] ? 1 : 0;
    rank[u] = r;
  }
  gb_group_sync<RPB>();  // counters and stage read: the table holds the sorted row next
#pragma unroll
  for (int u = 0; u < PE; ++u) {
    if (eb[u] >= 0) { keys[rank[u]] = ek[u]; vals[rank[u]] = ev[u]; }
  }
  gb_group_sync<RPB>();
  for (int i = t; i < c; i += T) {
    Cj[base + i] = keys[i];
    Cx[base + i] = vals[i];
  }
}

// ---------------------------------------------------------------------------
// SpGEMM, short rows without a table (issue 30): a row of at most GB_ESC_MAX products, one
// warp. Each lane expands two of the row's products into registers (column and ⊗ value; an
// absent one, or one outside the mask, has column INT_MAX), a bitonic sort of the 64 by
// column across the warp, then equal columns combined by a segmented scan with ⊕, and each
// run's last entry written at the run's rank (Cp[row] on): no shared memory, no atomics, no
// barrier beyond the warp's. counts[row] = the row's entries. Returns false, having done
// nothing, when the row has more products (the caller's table takes it).
// ---------------------------------------------------------------------------
constexpr int GB_ESC_MAX = 64;

// Bitonic sort of a warp's 64 keys, element e = r * 32 + lane, ascending; VALS: each value
// moves with its key (else `val` is not touched).
template <bool VALS, typename K, typename W>
__device__ __forceinline__ void gb_warp_sort64(K (&key)[2], W (&val)[2], int lane) {
  const unsigned full = 0xffffffffu;
#pragma unroll
  for (int kb = 2; kb <= 64; kb <<= 1) {
#pragma unroll
    for (int j = kb >> 1; j > 0; j >>= 1) {
      if (j == 32) {  // kb == 64: the pair is this lane's two registers, ascending
        if (key[1] < key[0]) {
          const K tk = key[0]; key[0] = key[1]; key[1] = tk;
          if constexpr (VALS) { const W tv = val[0]; val[0] = val[1]; val[1] = tv; }
        }
      } else {
#pragma unroll
        for (int r = 0; r < 2; ++r) {
          const int e = r * 32 + lane;
          const K ok = __shfl_xor_sync(full, key[r], j);
          const bool up = (e & kb) == 0, lower = (e & j) == 0;
          const bool take = lower == up ? ok < key[r] : ok > key[r];
          if constexpr (VALS) {
            const W ov = __shfl_xor_sync(full, val[r], j);
            if (take) val[r] = ov;
          }
          if (take) key[r] = ok;
        }
      }
    }
  }
}

template <class F, int MASK, typename I, typename TA, typename TB>
__device__ __forceinline__ bool gb_esc_row(
    long long row, int lane,
    const I* __restrict__ Ap, const I* __restrict__ Aj, const TA* __restrict__ Ax,
    const I* __restrict__ Bp, const I* __restrict__ Bj, const TB* __restrict__ Bx,
    const I* __restrict__ Mp, const I* __restrict__ Mj,
    long long* __restrict__ counts, long long base, int* __restrict__ Cj,
    typename F::W* __restrict__ Cx) {
  typedef typename F::W W;
  typedef typename F::M M;
  const unsigned full = 0xffffffffu;
  const int NONE = 0x7fffffff;  // an absent product's column: sorts last, never written
  const long long a0 = (long long)Ap[row], a1 = (long long)Ap[row + 1];
  int P = 0;  // the row's products, saturated past GB_ESC_MAX (ints from here on)
  for (long long p = a0 + lane; p < a1; p += 32) {
    const long long k = (long long)Aj[p];
    const long long d = (long long)Bp[k + 1] - (long long)Bp[k];
    P = (int)(P + (d > GB_ESC_MAX ? GB_ESC_MAX + 1 : d));
    P = P > GB_ESC_MAX ? GB_ESC_MAX + 1 : P;
  }
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) P += __shfl_xor_sync(full, P, o);
  if (P > GB_ESC_MAX) return false;
  long long m0 = 0, m1 = 0;
  if constexpr (MASK != 0) { m0 = (long long)Mp[row]; m1 = (long long)Mp[row + 1]; }
  int key[2] = {NONE, NONE};
  W val[2] = {F::identity(), F::identity()};
  int before = 0;  // the products of the A entries before this chunk of 32
  for (long long c = a0; c < a1; c += 32) {
    const long long p = c + lane;
    int d = 0;
    long long bstart = 0;  // this lane's B row start, less its first product's number
    M av = (M)0;
    if (p < a1) {
      const long long k = (long long)Aj[p];
      bstart = (long long)Bp[k];
      d = (int)((long long)Bp[k + 1] - bstart);
      av = F::load(Ax[p]);
    }
    int s = d;  // inclusive scan of the lanes' product counts
#pragma unroll
    for (int o = 1; o < 32; o <<= 1) {
      const int y = __shfl_up_sync(full, s, o);
      if (lane >= o) s += y;
    }
    const int start = before + s - d;  // this lane's first product
    bstart -= start;
    const int total = __shfl_sync(full, s, 31);
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const int q = r * 32 + lane;  // the product this lane holds in register r
      int lo = 0;                   // the last lane whose products start at or before q
#pragma unroll
      for (int step = 16; step > 0; step >>= 1) {
        const int sj = __shfl_sync(full, start, lo + step);
        if (sj <= q) lo += step;
      }
      const long long bq = __shfl_sync(full, bstart, lo) + q;
      const M a = __shfl_sync(full, av, lo);
      if (q >= before && q < before + total) {
        const int j = (int)Bj[bq];
        if (gb_allowed<MASK>(Mj, m0, m1, (long long)j)) {
          key[r] = j;
          val[r] = F::mul(a, F::load(Bx[bq]));
        }
      }
    }
    before += total;
  }
  // Sort the 64 by column. Columns below 2^25 (every lane's): 32-bit keys (column << 6 | the
  // product's element), the values left in place and fetched once after the sort; else the
  // (column, value) pairs sorted together.
  const bool narrow = __ballot_sync(full, ((unsigned)key[0] < (1u << 25) || key[0] == NONE)
                                          && ((unsigned)key[1] < (1u << 25) || key[1] == NONE)) == full;
  if (narrow) {
    unsigned pk[2];
#pragma unroll
    for (int r = 0; r < 2; ++r)
      pk[r] = key[r] == NONE ? 0xffffffffu : ((unsigned)key[r] << 6) | (unsigned)(r * 32 + lane);
    gb_warp_sort64<false>(pk, val, lane);
    const W v0 = val[0], v1 = val[1];
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const int src = (int)(pk[r] & 63u);
      const W x0 = __shfl_sync(full, v0, src & 31), x1 = __shfl_sync(full, v1, src & 31);
      val[r] = src >= 32 ? x1 : x0;
      key[r] = pk[r] == 0xffffffffu ? NONE : (int)(pk[r] >> 6);
    }
  } else {
    gb_warp_sort64<true>(key, val, lane);
  }
  // Runs of equal columns: a head starts one (the ballots hm0, hm1); each register's
  // segmented inclusive ⊕-scan takes a lane o back while it lies in the same run (at or
  // after the run's head, st0 / st1), the run crossing from register 0 into register 1
  // carried over.
  const int last0 = __shfl_sync(full, key[0], 31);
  int prev0 = __shfl_up_sync(full, key[0], 1), prev1 = __shfl_up_sync(full, key[1], 1);
  if (lane == 0) prev1 = last0;
  const bool head0 = lane == 0 || key[0] != prev0, head1 = key[1] != prev1;
  const unsigned hm0 = __ballot_sync(full, head0), hm1 = __ballot_sync(full, head1);
  const unsigned le = lane == 31 ? full : ((2u << lane) - 1u);
  const int st0 = 31 - __clz((int)(hm0 & le));            // lane 0 is a head: >= 0
  const int st1 = (hm1 & le) ? 31 - __clz((int)(hm1 & le)) : -1;  // -1: from register 0
  W s0 = val[0], s1 = val[1];
#pragma unroll
  for (int o = 1; o < 32; o <<= 1) {
    const W y0 = __shfl_up_sync(full, s0, o), y1 = __shfl_up_sync(full, s1, o);
    if (lane - o >= st0) s0 = F::add(y0, s0);
    if (lane - o >= (st1 < 0 ? 0 : st1)) s1 = F::add(y1, s1);
  }
  const W carry = __shfl_sync(full, s0, 31);
  if (st1 < 0) s1 = F::add(carry, s1);
  const bool tail0 = lane < 31 ? ((hm0 >> (lane + 1)) & 1u) != 0 : (hm1 & 1u) != 0;
  const bool tail1 = lane < 31 ? ((hm1 >> (lane + 1)) & 1u) != 0 : true;
  const bool ok0 = key[0] != NONE, ok1 = key[1] != NONE;
  const unsigned hb0 = __ballot_sync(full, head0 && ok0), hb1 = __ballot_sync(full, head1 && ok1);
  if (tail0 && ok0) {
    const long long at = base + __popc(hb0 & le) - 1;
    Cj[at] = key[0];
    Cx[at] = s0;
  }
  if (tail1 && ok1) {
    const long long at = base + __popc(hb0) + __popc(hb1 & le) - 1;
    Cj[at] = key[1];
    Cx[at] = s1;
  }
  if (lane == 0) counts[row] = __popc(hb0) + __popc(hb1);
  return true;
}

// One block's rows of a shared-table bin: `rows` the bin's row ids, `block` the block's index
// inside the bin; scratch: RPB * 36 ints of static shared memory.
// ESC: a numeric row of at most GB_ESC_MAX products in a warp-a-row bin of at most 128 slots
// takes gb_esc_row instead of the table.
template <class F, typename I, typename TA, typename TB, int S, int WPR, int RPB, bool NUMERIC, int MASK,
          bool ESC = false>
__device__ __forceinline__ void gb_spgemm_shared_rows(
    const long long* __restrict__ rows, long long nrows, long long block, int* scratch,
    const I* __restrict__ Ap, const I* __restrict__ Aj, const TA* __restrict__ Ax,
    const I* __restrict__ Bp, const I* __restrict__ Bj, const TB* __restrict__ Bx,
    const I* __restrict__ Mp, const I* __restrict__ Mj,
    long long* __restrict__ counts, const long long* __restrict__ Cp, int* __restrict__ Cj,
    typename F::W* __restrict__ Cx) {
  typedef typename F::W W;
  static_assert(RPB == 1 || WPR == 1, "several rows per block need one warp per row");
  constexpr int T = 32 * WPR;
  extern __shared__ __align__(16) unsigned char gb_smem[];
  W* svals = reinterpret_cast<W*>(gb_smem);
  int* skeys = reinterpret_cast<int*>(gb_smem + (NUMERIC ? sizeof(W) * RPB * S : 0));
  const int g = threadIdx.x / T;
  const int t = threadIdx.x % T;
  const long long r = block * RPB + g;
  if (r >= nrows) return;  // RPB > 1: a whole warp leaves; RPB == 1: the whole block
  const long long row = rows[r];
  if constexpr (ESC && NUMERIC && WPR == 1 && S <= 2 * GB_ESC_MAX) {
    if (gb_esc_row<F, MASK>(row, t, Ap, Aj, Ax, Bp, Bj, Bx, Mp, Mj, counts, Cp[row], Cj, Cx)) return;
  }
  int* scr = scratch + g * 36;
  if (NUMERIC && t == 0) { scr[32] = 0; scr[33] = 0x7fffffff; scr[34] = -1; }
  int* keys = skeys + g * S;
  W* vals = svals + (NUMERIC ? g * S : 0);
  for (int s = t; s < S; s += T) {
    keys[s] = -1;
    if constexpr (NUMERIC) vals[s] = F::identity();
  }
  gb_group_sync<RPB>();
  const long long fresh = gb_row_products<F, MASK, NUMERIC, T, 8>(
      row, t, keys, vals, (unsigned)(S - 1), Ap, Aj, Ax, Bp, Bj, Bx, Mp, Mj);
  if constexpr (!NUMERIC) {
    if (fresh) atomicAdd(reinterpret_cast<unsigned long long*>(&counts[row]), (unsigned long long)fresh);
  } else {
    gb_group_sync<RPB>();
    gb_sorted_write<S, T, RPB, W>(keys, vals, scr, t, Cp[row], Cj, Cx);
    if (t == 0) counts[row] = scr[32];  // the one-pass product compacts rows by it
  }
}

// One block's rows of a larger shared bin: rows[RPB * blockIdx.x ...] of the bin's nrows.
template <class F, typename I, typename TA, typename TB, int S, int WPR, int RPB, bool NUMERIC, int MASK>
__global__ void __launch_bounds__(32 * WPR * RPB) gb_spgemm_shared(
    const long long* __restrict__ rows, long long nrows,
    const I* __restrict__ Ap, const I* __restrict__ Aj, const TA* __restrict__ Ax,
    const I* __restrict__ Bp, const I* __restrict__ Bj, const TB* __restrict__ Bx,
    const I* __restrict__ Mp, const I* __restrict__ Mj,
    long long* __restrict__ counts, const long long* __restrict__ Cp, int* __restrict__ Cj,
    typename F::W* __restrict__ Cx) {
  __shared__ int scratch[RPB * 36];  // per row: scan partials [0, 32), count, min, max
  gb_spgemm_shared_rows<F, I, TA, TB, S, WPR, RPB, NUMERIC, MASK>(
      rows, nrows, blockIdx.x, scratch, Ap, Aj, Ax, Bp, Bj, Bx, Mp, Mj, counts, Cp, Cj, Cx);
}

// The bin of this block in a one-launch binned kernel (meta as gb_spmv_binned), the bin's
// first row in `rows`, its row count and the block's index inside the bin.
template <int NB>
__device__ __forceinline__ int gb_block_bin(const long long* __restrict__ meta, long long& r0,
                                            long long& nrows, long long& block) {
  const long long blk = blockIdx.x;
  int b = 0;
#pragma unroll
  for (int q = 1; q < NB; ++q) b += blk >= meta[NB + 1 + q] ? 1 : 0;
  r0 = meta[b];
  nrows = meta[b + 1] - meta[b];
  block = blk - meta[NB + 1 + b];
  return b;
}

// The bin of this block in gb_spgemm_binned, its first row in `rows`, its row count and the
// block's index inside the bin, from the binning's own running sums (graph_bins.cuh,
// gb_bin_count: `ends` bin-major over `nb` blocks, bin b's cumulative end at
// ends[(b + 1) * nb - 1]): bin b's blocks follow bin b - 1's, RPB[b] rows a block. Read on
// the device, so the host launches without building the bins' table (issue 30).
template <int NB>
__device__ __forceinline__ int gb_spgemm_block_bin(const long long* __restrict__ ends, long long nb,
                                                   const int (&rpb)[NB], long long& r0, long long& nrows,
                                                   long long& block) {
  const long long blk = blockIdx.x;
  long long start = 0, first = 0;
  int b = 0;
  for (; b < NB - 1; ++b) {
    const long long end = ends[(long long)(b + 1) * nb - 1];
    const long long blocks = (end - start + rpb[b] - 1) / rpb[b];
    if (blk < first + blocks) break;
    start = end;
    first += blocks;
  }
  r0 = start;
  nrows = ends[(long long)(b + 1) * nb - 1] - start;
  block = blk - first;
  return b;
}

// Every bin of 256-thread blocks in one launch (issue 30): bins 0 .. 6 of SHARED_BINS
// (graph_codegen.py: 32 … 256 slots, a warp a row, 8 rows a block; 512 … 2,048 slots, 8
// warps a row). rows: the bins' row ids one after another; ends, nb: the binning's running
// sums, where each block finds its bin (gb_spgemm_block_bin). Dynamic shared memory: the
// largest table of the bins this launch holds rows of, at most 24 KiB (8-byte values), so
// that the smallest bins keep a full SM of threads. ESC: short rows without a table
// (gb_esc_row).
template <class F, typename I, typename TA, typename TB, bool NUMERIC, int MASK, bool ESC>
__global__ void __launch_bounds__(256) gb_spgemm_binned(
    const long long* __restrict__ rows, const long long* __restrict__ ends, long long nb,
    const I* __restrict__ Ap, const I* __restrict__ Aj, const TA* __restrict__ Ax,
    const I* __restrict__ Bp, const I* __restrict__ Bj, const TB* __restrict__ Bx,
    const I* __restrict__ Mp, const I* __restrict__ Mj,
    long long* __restrict__ counts, const long long* __restrict__ Cp, int* __restrict__ Cj,
    typename F::W* __restrict__ Cx) {
  constexpr int NB = 7;
  constexpr int rpb[NB] = {8, 8, 8, 8, 1, 1, 1};  // the cases below
  __shared__ int scratch[8 * 36];
  long long r0, nrows, block;
  const int b = gb_spgemm_block_bin<NB>(ends, nb, rpb, r0, nrows, block);
#define GB_ROWS rows + r0, nrows, block, scratch, Ap, Aj, Ax, Bp, Bj, Bx, Mp, Mj, counts, Cp, Cj, Cx
  switch (b) {
    case 0: gb_spgemm_shared_rows<F, I, TA, TB, 32, 1, 8, NUMERIC, MASK, ESC>(GB_ROWS); return;
    case 1: gb_spgemm_shared_rows<F, I, TA, TB, 64, 1, 8, NUMERIC, MASK, ESC>(GB_ROWS); return;
    case 2: gb_spgemm_shared_rows<F, I, TA, TB, 128, 1, 8, NUMERIC, MASK, ESC>(GB_ROWS); return;
    case 3: gb_spgemm_shared_rows<F, I, TA, TB, 256, 1, 8, NUMERIC, MASK>(GB_ROWS); return;
    case 4: gb_spgemm_shared_rows<F, I, TA, TB, 512, 8, 1, NUMERIC, MASK>(GB_ROWS); return;
    case 5: gb_spgemm_shared_rows<F, I, TA, TB, 1024, 8, 1, NUMERIC, MASK>(GB_ROWS); return;
    default: gb_spgemm_shared_rows<F, I, TA, TB, 2048, 8, 1, NUMERIC, MASK>(GB_ROWS); return;
  }
#undef GB_ROWS
}

// ---------------------------------------------------------------------------
// SpGEMM, rows too large for shared memory: a block per row, a global-memory table of
// toff[r+1] - toff[r] slots (a power of two) per row of the chunk; the numeric pass writes
// the row's entries unsorted and the host sorts these rows afterwards. DENSE (issue 30: the
// result's n columns times the bin's rows fit a small budget): `stride` = n slots a row, a
// column its own slot, no hash, no probe; the table is read back in slot order (a block
// scan), so the row is written in column order, nothing to sort, and the host needs no
// read of the rows' bounds to size the tables.
// ---------------------------------------------------------------------------
template <class F, typename I, typename TA, typename TB, bool NUMERIC, int MASK, bool DENSE>
__global__ void __launch_bounds__(512) gb_spgemm_global(
    const long long* __restrict__ rows, long long nrows, const long long* __restrict__ toff,
    long long stride, int* __restrict__ gkeys, typename F::W* __restrict__ gvals,
    const I* __restrict__ Ap, const I* __restrict__ Aj, const TA* __restrict__ Ax,
    const I* __restrict__ Bp, const I* __restrict__ Bj, const TB* __restrict__ Bx,
    const I* __restrict__ Mp, const I* __restrict__ Mj,
    long long* __restrict__ counts, const long long* __restrict__ Cp, int* __restrict__ Cj,
    typename F::W* __restrict__ Cx) {
  typedef typename F::W W;
  __shared__ unsigned long long cursor;
  __shared__ unsigned int warp_n[16];
  const long long r = blockIdx.x;
  if (r >= nrows) return;
  const long long row = rows[r];
  const long long t0 = DENSE ? r * stride : toff[r];
  const long long size = DENSE ? stride : toff[r + 1] - t0;
  int* keys = gkeys + t0;
  W* vals = gvals + (NUMERIC ? t0 : 0);
  for (long long s = threadIdx.x; s < size; s += blockDim.x) {
    keys[s] = -1;
    if constexpr (NUMERIC) vals[s] = F::identity();
  }
  if (threadIdx.x == 0) cursor = 0;
  __syncthreads();
  const long long fresh = gb_row_products<F, MASK, NUMERIC, 512, 8, DENSE>(
      row, threadIdx.x, keys, vals, (unsigned)(size - 1), Ap, Aj, Ax, Bp, Bj, Bx, Mp, Mj);
  if constexpr (!NUMERIC) {
    if (fresh) atomicAdd(reinterpret_cast<unsigned long long*>(&counts[row]), (unsigned long long)fresh);
  } else if constexpr (DENSE) {  // slots in order, 512 at a time: a warp vote, then the warps'
    __syncthreads();             // counts summed before each warp
    const long long base = Cp[row];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    for (long long s0 = 0; s0 < size; s0 += 512) {
      const long long s = s0 + threadIdx.x;
      const bool has = s < size && keys[s] >= 0;
      const unsigned vote = __ballot_sync(0xffffffffu, has);
      if (lane == 0) warp_n[warp] = __popc(vote);
      __syncthreads();
      unsigned long long before = cursor;
      for (int w = 0; w < warp; ++w) before += warp_n[w];
      if (has) {
        const unsigned long long pos = before + __popc(vote & ((1u << lane) - 1u));
        Cj[base + pos] = keys[s];
        Cx[base + pos] = vals[s];
      }
      __syncthreads();
      if (threadIdx.x == 0) {
        unsigned long long all = 0;
        for (int w = 0; w < 16; ++w) all += warp_n[w];
        cursor += all;
      }
      __syncthreads();
    }
    if (threadIdx.x == 0) counts[row] = (long long)cursor;
  } else {
    __syncthreads();
    const long long base = Cp[row];
    for (long long s = threadIdx.x; s < size; s += blockDim.x) {
      const int k = keys[s];
      if (k < 0) continue;
      const unsigned long long pos = atomicAdd(&cursor, 1ULL);
      Cj[base + pos] = k;
      Cx[base + pos] = vals[s];
    }
    __syncthreads();
    if (threadIdx.x == 0) counts[row] = (long long)cursor;
  }
}

// ---------------------------------------------------------------------------
// SpMV (pull): y(i) = ⊕_{k: A(i,k) stored, x_present[k]} mul(A(i,k), x[k]).
// G lanes per row (1, 4, 16 or 32) or a block per row, by degree. xp: present flags or null.
// ymask: bool per row or null; COMP: keep rows where ymask is false. CSUM: compensated sums
// (for ⊕ = plus on floats; ignored otherwise).
// ---------------------------------------------------------------------------
template <class F, int G>
__device__ __forceinline__ void gb_group_combine(typename F::W& acc, int& has) {
#pragma unroll
  for (int off = G / 2; off > 0; off >>= 1) {
    const typename F::W o = __shfl_xor_sync(0xffffffffu, acc, off, G);
    const int oh = __shfl_xor_sync(0xffffffffu, has, off, G);
    if (oh) acc = has ? F::add(acc, o) : o;
    has |= oh;
  }
}

template <typename W> struct gb_is_float { static constexpr bool value = false; };
template <> struct gb_is_float<float> { static constexpr bool value = true; };
template <> struct gb_is_float<double> { static constexpr bool value = true; };

// Compensated sums (Neumaier): s + c is the running sum with about one rounding of error,
// whatever the number of terms. Used for ⊕ = plus on floats when the caller asks for it.
template <class F, bool CSUM>
struct gb_csum { static constexpr bool on = CSUM && F::KIND == 1 && gb_is_float<typename F::W>::value; };

// The additions are the intrinsics nvcc never contracts into a multiply-add: each term is the
// product as rounded in W, the same value in the sum and in its correction.
__device__ __forceinline__ double gb_add_rn(double a, double b) { return __dadd_rn(a, b); }
__device__ __forceinline__ float gb_add_rn(float a, float b) { return __fadd_rn(a, b); }
__device__ __forceinline__ double gb_sub_rn(double a, double b) { return __dsub_rn(a, b); }
__device__ __forceinline__ float gb_sub_rn(float a, float b) { return __fsub_rn(a, b); }

// The compensated sum's value: s + c, or s where s is infinite or NaN (Inf - Inf in the
// correction would turn an infinite sum into NaN).
template <typename W>
__device__ __forceinline__ W gb_csum_total(W s, W c) { return isfinite(s) ? s + c : s; }

template <typename W>
__device__ __forceinline__ void gb_neumaier(W& s, W& c, W v) {
  const W t = gb_add_rn(s, v);
  c = gb_add_rn(c, (fabs(s) >= fabs(v)) ? gb_add_rn(gb_sub_rn(s, t), v) : gb_add_rn(gb_sub_rn(v, t), s));
  s = t;
}

// One term into a row's sum: compensated (CS, gb_neumaier) or by ⊕; the first term (has = 0)
// starts it.
template <class F, bool CS>
__device__ __forceinline__ void gb_fold(typename F::W& acc, typename F::W& comp, int& has,
                                        typename F::W v) {
  if constexpr (CS) {
    if (has) gb_neumaier(acc, comp, v); else { acc = v; comp = (typename F::W)0; }
  } else {
    acc = has ? F::add(acc, v) : v;
  }
  has = 1;
}

// The group's partial sums combined, compensated: (s, c) of every lane into lane 0's.
template <class F, int G>
__device__ __forceinline__ void gb_group_combine_csum(typename F::W& s, typename F::W& c, int& has) {
#pragma unroll
  for (int off = G / 2; off > 0; off >>= 1) {
    const typename F::W os = __shfl_xor_sync(0xffffffffu, s, off, G);
    const typename F::W oc = __shfl_xor_sync(0xffffffffu, c, off, G);
    const int oh = __shfl_xor_sync(0xffffffffu, has, off, G);
    if (oh) {
      if (has) { gb_neumaier(s, c, os); c += oc; } else { s = os; c = oc; }
    }
    has |= oh;
  }
}

// One lane's share of row `row`: entries lane, lane + step, ...; compensated when CS.
template <class F, bool CS, typename I, typename TA, typename TX>
__device__ __forceinline__ void gb_spmv_lane(long long row, int lane, int step,
    const I* __restrict__ Ap, const I* __restrict__ Aj, const TA* __restrict__ Ax,
    const TX* __restrict__ x, const bool* __restrict__ xp, typename F::W& acc,
    typename F::W& comp, int& has) {
  const long long a1 = (long long)Ap[row + 1];
  for (long long p = (long long)Ap[row] + lane; p < a1; p += step) {
    const long long k = (long long)Aj[p];
    if (xp != nullptr && !xp[k]) continue;
    gb_fold<F, CS>(acc, comp, has, F::mul(F::load(Ax[p]), F::load(x[k])));
  }
}

template <class F, int G, bool CS>
__device__ __forceinline__ void gb_combine(typename F::W& acc, typename F::W& comp, int& has) {
  if constexpr (CS) gb_group_combine_csum<F, G>(acc, comp, has);
  else gb_group_combine<F, G>(acc, has);
}

// One launch for every degree bin: rows holds the bins' row ids one after another; meta holds
// the bins' first row (meta[b], b = 0..NB) and first block (meta[NB + 1 + b]); bin b < NB - 1
// gives GS[b] lanes per row (256 threads a block), the last bin a 256-thread block per row.
template <class F, int G, bool CS, typename I, typename TA, typename TX, bool COMP>
__device__ __forceinline__ void gb_spmv_binned_group(const long long* __restrict__ rows, long long r0,
    long long nrows, long long block, const I* __restrict__ Ap, const I* __restrict__ Aj,
    const TA* __restrict__ Ax, const TX* __restrict__ x, const bool* __restrict__ xp,
    const bool* __restrict__ ymask, typename F::W* __restrict__ y, bool* __restrict__ yp) {
  const long long tid = block * 256 + threadIdx.x;
  const long long r = tid / G;
  const int lane = (int)(tid % G);
  long long row = -1;
  if (r < nrows) row = rows[r0 + r];
  bool keep = row >= 0;
  if (keep && ymask != nullptr) keep = COMP ? !ymask[row] : ymask[row];
  typename F::W acc = F::identity(), comp = (typename F::W)0;
  int has = 0;
  if (keep) gb_spmv_lane<F, CS>(row, lane, G, Ap, Aj, Ax, x, xp, acc, comp, has);
  if constexpr (G > 1) gb_combine<F, G, CS>(acc, comp, has);
  if (lane == 0 && row >= 0) {
    if constexpr (CS) acc = gb_csum_total(acc, comp);
    y[row] = has ? acc : F::identity();
    yp[row] = has != 0;
  }
}

// One row by a whole 256-thread block (8 warps), over global memory: each lane's part
// of the row, the warp's combine, the 8 warp partials combined by thread 0 (Neumaier with
// compensated sums), y[row] written (and yp[row] where yp is given). The long rows of both
// the binned and the row-tile SpMV.
template <class F, bool CS, typename I, typename TA, typename TX>
__device__ __forceinline__ void gb_spmv_block_row(long long row, bool keep,
    const I* __restrict__ Ap, const I* __restrict__ Aj, const TA* __restrict__ Ax,
    const TX* __restrict__ x, const bool* __restrict__ xp,
    typename F::W* __restrict__ y, bool* __restrict__ yp) {
  typedef typename F::W W;
  __shared__ W wacc[8], wcomp[8];
  __shared__ int whas[8];
  const int t = threadIdx.x;
  W acc = F::identity(), comp = (W)0;
  int has = 0;
  if (keep) gb_spmv_lane<F, CS>(row, t, 256, Ap, Aj, Ax, x, xp, acc, comp, has);
  gb_combine<F, 32, CS>(acc, comp, has);
  if (t % 32 == 0) { wacc[t / 32] = acc; wcomp[t / 32] = comp; whas[t / 32] = has; }
  __syncthreads();
  if (t == 0) {
    W a = F::identity(), c = (W)0;
    int h = 0;
    for (int w = 0; w < 8; ++w) {
      if (!whas[w]) continue;
      if constexpr (CS) {
        if (h) { gb_neumaier(a, c, wacc[w]); c += wcomp[w]; } else { a = wacc[w]; c = wcomp[w]; }
      } else {
        a = h ? F::add(a, wacc[w]) : wacc[w];
      }
      h = 1;
    }
    if constexpr (CS) a = gb_csum_total(a, c);
    y[row] = h ? a : F::identity();
    if (yp != nullptr) yp[row] = h != 0;
  }
}

template <class F, typename I, typename TA, typename TX, bool COMP, bool CSUM>
__global__ void __launch_bounds__(256) gb_spmv_binned(const long long* __restrict__ rows,
    const long long* __restrict__ meta,
    const I* __restrict__ Ap, const I* __restrict__ Aj, const TA* __restrict__ Ax,
    const TX* __restrict__ x, const bool* __restrict__ xp, const bool* __restrict__ ymask,
    typename F::W* __restrict__ y, bool* __restrict__ yp) {
  typedef typename F::W W;
  constexpr int NB = 5;  // SPMV_BINS (4 group bins) + the block bin
  constexpr bool CS = gb_csum<F, CSUM>::on;
  long long r0, nrows, block;
  const int b = gb_block_bin<NB>(meta, r0, nrows, block);
  switch (b) {
    case 0: gb_spmv_binned_group<F, 1, CS, I, TA, TX, COMP>(rows, r0, nrows, block, Ap, Aj, Ax, x, xp, ymask, y, yp); return;
    case 1: gb_spmv_binned_group<F, 4, CS, I, TA, TX, COMP>(rows, r0, nrows, block, Ap, Aj, Ax, x, xp, ymask, y, yp); return;
    case 2: gb_spmv_binned_group<F, 16, CS, I, TA, TX, COMP>(rows, r0, nrows, block, Ap, Aj, Ax, x, xp, ymask, y, yp); return;
    case 3: gb_spmv_binned_group<F, 32, CS, I, TA, TX, COMP>(rows, r0, nrows, block, Ap, Aj, Ax, x, xp, ymask, y, yp); return;
    default: break;
  }
  const long long row = rows[r0 + block];
  bool keep = true;
  if (ymask != nullptr) keep = COMP ? !ymask[row] : ymask[row];
  gb_spmv_block_row<F, CS>(row, keep, Ap, Aj, Ax, x, xp, y, yp);
}

// ---------------------------------------------------------------------------
// SpMV, row tiles (CSR-stream / CSR-adaptive; issue 30): the one SpMV kernel `spmv` launches.
// Block b takes the rows i whose merge coordinate Ap[i] + i lies in [b * TILE, (b + 1) * TILE)
// (starts[b] .. starts[b + 1], computed once per matrix): at most TILE rows and TILE entries,
// except that the block's last row may run on. No row ids are read: the block's entries
// [Ap[r0], Ap[rs]) are one contiguous range, loaded coalesced by all 256 threads (several
// gathers of x in flight a thread), ⊗ applied, the products staged in shared memory; then
// a thread reduces each row of at most 32 entries, a warp each longer one, from shared
// memory (rows written in order, ⊕ in entry order inside a lane). A last row that does not
// fit the 2 * TILE staged entries is reduced by the whole block from global memory.
// Bytes: the entries once (index + value), x gathered once an entry, Ap and y once a row,
// one 8-byte start a block: cuSPARSE's bytes. yp (present flags) is written unless null:
// without x's flags and a mask it is the matrix's non-empty rows, which the host caches.
// ---------------------------------------------------------------------------
template <class F, bool CS>
__device__ __forceinline__ void gb_staged_reduce(const typename F::W* sv, const unsigned char* sf,
    bool flags, int a, int b, int lane, int step, typename F::W& acc, typename F::W& comp, int& has) {
  for (int i = a + lane; i < b; i += step) {
    if (flags && !sf[i]) continue;
    gb_fold<F, CS>(acc, comp, has, sv[i]);
  }
}

template <class F, typename I, typename TA, typename TX, bool COMP, bool CSUM, int TILE>
__global__ void __launch_bounds__(256) gb_spmv_stream(const long long* __restrict__ starts,
    const I* __restrict__ Ap, const I* __restrict__ Aj, const TA* __restrict__ Ax,
    const TX* __restrict__ x, const bool* __restrict__ xp, const bool* __restrict__ ymask,
    typename F::W* __restrict__ y, bool* __restrict__ yp) {
  typedef typename F::W W;
  constexpr int CAP = 2 * TILE;  // staged entries
  constexpr int LONG = 32;       // rows above this many entries get a warp
  constexpr bool CS = gb_csum<F, CSUM>::on;
  __shared__ W sv[CAP];
  __shared__ unsigned char sf[CAP];  // present flags of x (only with xp)
  __shared__ int longrows[CAP / LONG + 1];
  __shared__ int nlong;
  const long long r0 = starts[blockIdx.x];
  const long long r1 = starts[blockIdx.x + 1];
  if (r0 >= r1) return;  // a tile inside one long row: its block reduces it
  const int t = threadIdx.x;
  const long long e0 = (long long)Ap[r0];
  long long rs = r1;  // rows [r0, rs) staged
  if ((long long)Ap[r1] - e0 > CAP) rs = r1 - 1;
  const int E = (int)((long long)Ap[rs] - e0);
  const bool flags = xp != nullptr;
  if (t == 0) nlong = 0;
#pragma unroll
  for (int u = 0; u < CAP / 256; ++u) {
    const int i = t + u * 256;
    if (i < E) {
      const long long p = e0 + i;
      const long long k = (long long)Aj[p];
      bool ok = true;
      if (flags) { ok = xp[k]; sf[i] = ok ? 1 : 0; }
      if (ok) sv[i] = F::mul(F::load(Ax[p]), F::load(x[k]));
    }
  }
  __syncthreads();
  // a thread a row (rows of at most LONG entries); longer rows listed for the warps
  for (long long r = r0 + t; r < rs; r += 256) {
    const int a = (int)((long long)Ap[r] - e0);
    const int b = (int)((long long)Ap[r + 1] - e0);
    const bool keep = ymask == nullptr || (COMP ? !ymask[r] : ymask[r]);
    if (keep && b - a > LONG) { longrows[atomicAdd(&nlong, 1)] = (int)(r - r0); continue; }
    W acc = F::identity(), comp = (W)0;
    int has = 0;
    if (keep) gb_staged_reduce<F, CS>(sv, sf, flags, a, b, 0, 1, acc, comp, has);
    if constexpr (CS) acc = gb_csum_total(acc, comp);
    y[r] = has ? acc : F::identity();
    if (yp != nullptr) yp[r] = has != 0;
  }
  __syncthreads();
  const int lane = t & 31, warp = t >> 5;
  for (int q = warp; q < nlong; q += 8) {
    const long long r = r0 + longrows[q];
    const int a = (int)((long long)Ap[r] - e0);
    const int b = (int)((long long)Ap[r + 1] - e0);
    W acc = F::identity(), comp = (W)0;
    int has = 0;
    gb_staged_reduce<F, CS>(sv, sf, flags, a, b, lane, 32, acc, comp, has);
    gb_combine<F, 32, CS>(acc, comp, has);
    if (lane == 0) {
      if constexpr (CS) acc = gb_csum_total(acc, comp);
      y[r] = has ? acc : F::identity();
      if (yp != nullptr) yp[r] = has != 0;
    }
  }
  if (rs == r1) return;  // block-uniform
  // the last row, too long to stage: 256 lanes over global memory
  const long long row = rs;
  const bool keep = ymask == nullptr || (COMP ? !ymask[row] : ymask[row]);
  gb_spmv_block_row<F, CS>(row, keep, Ap, Aj, Ax, x, xp, y, yp);
}

// ---------------------------------------------------------------------------
// SpMV, rows in order (issue 30): G lanes a row (G = 2 … 32, a power of two), row r taken by
// threads r·G … r·G + G - 1, so a warp reads 32 / G consecutive rows' entries in one
// coalesced sweep and neighbouring rows' x entries (a stencil's or a band's columns) from
// the same lines. No row ids, no tile starts, no shared memory, no block-wide pass: for
// regular rows (the planner rule gbdist/compiler/spmv_choice.py, choose_full, picks it and
// G from the row statistics) this is all the row-tile kernel's balancing costs without its
// gain. Same semantics as gb_spmv_stream (xp, ymask/COMP, CSUM; yp written unless null).
// ---------------------------------------------------------------------------
template <class F, typename I, typename TA, typename TX, bool COMP, bool CSUM, int G>
__global__ void __launch_bounds__(256) gb_spmv_rows(long long m,
    const I* __restrict__ Ap, const I* __restrict__ Aj, const TA* __restrict__ Ax,
    const TX* __restrict__ x, const bool* __restrict__ xp, const bool* __restrict__ ymask,
    typename F::W* __restrict__ y, bool* __restrict__ yp) {
  typedef typename F::W W;
  static_assert(G >= 2 && G <= 32 && (G & (G - 1)) == 0, "G lanes a row: a power of two, 2 .. 32");
  constexpr bool CS = gb_csum<F, CSUM>::on;
  const long long tid = (long long)blockIdx.x * 256 + threadIdx.x;
  const long long row = tid / G;
  const int lane = (int)(tid % G);
  const bool inside = row < m;  // every lane stays for the shuffles below
  const bool keep = inside && (ymask == nullptr || (COMP ? !ymask[row] : ymask[row]));
  W acc = F::identity(), comp = (W)0;
  int has = 0;
  if (keep) gb_spmv_lane<F, CS>(row, lane, G, Ap, Aj, Ax, x, xp, acc, comp, has);
  gb_combine<F, G, CS>(acc, comp, has);
  if (lane == 0 && inside) {
    if constexpr (CS) acc = gb_csum_total(acc, comp);
    y[row] = has ? acc : F::identity();
    if (yp != nullptr) yp[row] = has != 0;
  }
}

// Symmetric SpMV: A = U + Uᵀ − diag with U the upper triangle (diagonal included) of a
// symmetric A; reads U only (about half of A). Each stored U(i,j) adds mul(U(i,j), x[j]) to
// y[i] (summed in the row's lanes, then one atomic ⊕) and, off the diagonal, mul(U(i,j), x[i])
// to y[j] (an atomic ⊕). y starts at ⊕'s identity, yp at 0. Bins and meta as gb_spmv_binned
// (over U's row degrees).
// One lane's share of row `row` (entries lane, lane + step, ...); the CW lanes of a combine
// group then fold their row sums and one of them adds it to y[row] atomically.
template <class F, int CW, typename I, typename TA, typename TX, bool COMP>
__device__ __forceinline__ void gb_spmv_sym_lane(long long row, int lane, int step,
    const I* __restrict__ Up, const I* __restrict__ Uj, const TA* __restrict__ Ux,
    const TX* __restrict__ x, const bool* __restrict__ xp, const bool* __restrict__ ymask,
    typename F::W* __restrict__ y, int* __restrict__ yp) {
  typedef typename F::W W;
  typedef typename F::M M;
  W acc = F::identity();
  int has = 0;
  if (row >= 0) {
    const bool xi = xp == nullptr || xp[row];
    const M xv = F::load(x[row]);
    const bool keep_i = ymask == nullptr || (COMP ? !ymask[row] : ymask[row]);
    const long long a1 = (long long)Up[row + 1];
    for (long long p = (long long)Up[row] + lane; p < a1; p += step) {
      const long long j = (long long)Uj[p];
      const M a = F::load(Ux[p]);
      if (keep_i && (xp == nullptr || xp[j])) {
        const W v = F::mul(a, F::load(x[j]));
        acc = has ? F::add(acc, v) : v;
        has = 1;
      }
      if (j != row && xi && (ymask == nullptr || (COMP ? !ymask[j] : ymask[j]))) {
        gb_atomic_combine_g<F>(&y[j], F::mul(a, xv));
        yp[j] = 1;
      }
    }
  }
  if constexpr (CW > 1) gb_group_combine<F, CW>(acc, has);
  if (lane % CW == 0 && row >= 0 && has) {
    gb_atomic_combine_g<F>(&y[row], acc);
    yp[row] = 1;
  }
}

template <class F, int G, typename I, typename TA, typename TX, bool COMP>
__device__ __forceinline__ void gb_spmv_sym_group(const long long* __restrict__ rows, long long r0,
    long long nrows, long long block, const I* __restrict__ Up, const I* __restrict__ Uj,
    const TA* __restrict__ Ux, const TX* __restrict__ x, const bool* __restrict__ xp,
    const bool* __restrict__ ymask, typename F::W* __restrict__ y, int* __restrict__ yp) {
  const long long tid = block * 256 + threadIdx.x;
  const long long r = tid / G;
  const long long row = r < nrows ? rows[r0 + r] : -1;
  gb_spmv_sym_lane<F, G, I, TA, TX, COMP>(row, (int)(tid % G), G, Up, Uj, Ux, x, xp, ymask, y, yp);
}

template <class F, typename I, typename TA, typename TX, bool COMP>
__global__ void __launch_bounds__(256) gb_spmv_symmetric(const long long* __restrict__ rows,
    const long long* __restrict__ meta,
    const I* __restrict__ Up, const I* __restrict__ Uj, const TA* __restrict__ Ux,
    const TX* __restrict__ x, const bool* __restrict__ xp, const bool* __restrict__ ymask,
    typename F::W* __restrict__ y, int* __restrict__ yp) {
  constexpr int NB = 5;
  long long r0, nrows, block;
  const int b = gb_block_bin<NB>(meta, r0, nrows, block);
  switch (b) {
    case 0: gb_spmv_sym_group<F, 1, I, TA, TX, COMP>(rows, r0, nrows, block, Up, Uj, Ux, x, xp, ymask, y, yp); return;
    case 1: gb_spmv_sym_group<F, 4, I, TA, TX, COMP>(rows, r0, nrows, block, Up, Uj, Ux, x, xp, ymask, y, yp); return;
    case 2: gb_spmv_sym_group<F, 16, I, TA, TX, COMP>(rows, r0, nrows, block, Up, Uj, Ux, x, xp, ymask, y, yp); return;
    case 3: gb_spmv_sym_group<F, 32, I, TA, TX, COMP>(rows, r0, nrows, block, Up, Uj, Ux, x, xp, ymask, y, yp); return;
    default:  // a long row: 256 lanes, each warp adding its share to y[row]
      gb_spmv_sym_lane<F, 32, I, TA, TX, COMP>(rows[r0 + block], threadIdx.x, 256, Up, Uj, Ux, x, xp, ymask, y, yp);
      return;
  }
}

// ---------------------------------------------------------------------------
// SpMSpV (push): a warp per frontier entry k scatters mul(u(k), A(k,j)) into y(j) with
// atomic ⊕ (y starts at the identity) and marks yp[j]. ymask/COMP filter the outputs j.
// ---------------------------------------------------------------------------
template <class F, typename I, typename TA, typename TU, typename TI, bool COMP>
__global__ void gb_spmspv(const TI* __restrict__ uidx, const TU* __restrict__ uval, long long nu,
    const I* __restrict__ Ap, const I* __restrict__ Aj, const TA* __restrict__ Ax,
    const bool* __restrict__ ymask, typename F::W* __restrict__ y, int* __restrict__ yp) {
  typedef typename F::M M;
  const long long tid = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  const long long e = tid / 32;
  const int lane = (int)(tid % 32);
  if (e >= nu) return;
  const long long k = (long long)uidx[e];
  const M uv = F::load(uval[e]);
  const long long a1 = (long long)Ap[k + 1];
  for (long long p = (long long)Ap[k] + lane; p < a1; p += 32) {
    const long long j = (long long)Aj[p];
    if (ymask != nullptr && (COMP ? ymask[j] : !ymask[j])) continue;
    gb_atomic_combine_g<F>(&y[j], F::mul(uv, F::load(Ax[p])));
    yp[j] = 1;
  }
}

// ---------------------------------------------------------------------------
// Segment reduction: a warp per segment s, ⊕ of values[ptr[s]:ptr[s+1]].
// ---------------------------------------------------------------------------
template <class F, typename P, typename TV>
__global__ void gb_segment_reduce(const P* __restrict__ ptr, long long nseg, const TV* __restrict__ values,
                                  typename F::W* __restrict__ out, bool* __restrict__ present) {
  typedef typename F::W W;
  const long long tid = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  const long long s = tid / 32;
  const int lane = (int)(tid % 32);
  W acc = F::identity();
  int has = 0;
  if (s < nseg) {
    const long long e = (long long)ptr[s + 1];
    for (long long p = (long long)ptr[s] + lane; p < e; p += 32) {
      const W v = F::cast(F::load(values[p]));
      acc = has ? F::add(acc, v) : v;
      has = 1;
    }
  }
  gb_group_combine<F, 32>(acc, has);
  if (lane == 0 && s < nseg) {
    out[s] = has ? acc : F::identity();
    present[s] = has != 0;
  }
}
