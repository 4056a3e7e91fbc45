// Symmetric SpMV on band-like matrices (issue 30): y = A x with A = U + Uᵀ − diag(U), U the
// upper triangle (diagonal included) of a symmetric A, read once. Unmasked, x dense (every
// entry present): the general case is gb_spmv_symmetric (kernels/graph_kernels.cuh).
//
// Rows in order, no bins: G lanes a row, RPB = 256 / G rows a pass, PASSES passes a block,
// so a block owns the R = RPB * PASSES consecutive rows [r0, r0 + R). Each stored U(i,j) is
// used twice: mul(U(i,j), x[j]) into the row's register sum and, off the diagonal,
// mul(U(i,j), x[i]) into y[j]. TILE: the block's rows accumulate in shared memory (the
// row's own sum and every transposed term with j inside the block's rows: a band's near
// diagonals), flushed with one global atomic a row; the other transposed terms are global
// atomics. Without TILE every term is a global atomic. y starts at ⊕'s identity. A U with
// entries below the diagonal is read as A = U + Uᵀ − diag(U) (its terms go to global memory).
//
// gb_spmv_sym_fixed (⊕ = plus, ⊗ = times, float results): the same walk, every term summed
// exactly in fixed point (two int64 words a row, integer atomics: associative, so the
// result does not depend on the order the atomics land: bitwise reproducible). A term t
// is t * 2^(S - E) = hi + lo * 2^-L (hi, lo truncated toward zero): 2^E bounds every
// |a * x| (from max|A| and max|x|, on the device), S = 52 - D and L = min(52, 62 - D) with
// 2^D > the longest row of A, so neither word overflows and hi stays exact in a double.
// gb_sym_fixed_finish rounds hi * 2^(E-S) + lo * 2^(E-S-L) once into y. Terms below
// 2^(E-S-L) are dropped (at most deg * 2^(E-S-L) absolute per row). When max|A| * max|x|
// is not finite (an Inf or NaN in x, or a product that overflows), the kernel adds the
// terms as doubles into the hi words instead (atomics: not reproducible, but Inf and NaN
// results do not depend on order) and the finish reads them back.

template <class F, typename I, typename TA, typename TX, int G, bool TILE, int PASSES>
__global__ void __launch_bounds__(256) gb_spmv_sym_rows(long long n,
    const I* __restrict__ Up, const I* __restrict__ Uj, const TA* __restrict__ Ux,
    const TX* __restrict__ x, typename F::W* __restrict__ y) {
  typedef typename F::W W;
  typedef typename F::M M;
  constexpr int RPB = 256 / G;
  constexpr int R = RPB * PASSES;
  __shared__ W s[TILE ? R : 1];
  const long long r0 = (long long)blockIdx.x * R;
  const long long rend = r0 + R < n ? r0 + R : n;
  if constexpr (TILE) {
    for (int r = threadIdx.x; r < R; r += 256) s[r] = F::identity();
    __syncthreads();
  }
  const int lane = threadIdx.x % G;
#pragma unroll 1
  for (int q = 0; q < PASSES; ++q) {
    const long long row = r0 + (long long)q * RPB + threadIdx.x / G;
    W acc = F::identity();
    int has = 0;
    if (row < rend) {
      const M xv = F::load(x[row]);
      const long long a1 = (long long)Up[row + 1];
      for (long long p = (long long)Up[row] + lane; p < a1; p += G) {
        const long long j = (long long)Uj[p];
        const M a = F::load(Ux[p]);
        const W v = F::mul(a, F::load(x[j]));
        acc = has ? F::add(acc, v) : v;
        has = 1;
        if (j != row) {
          if (TILE && j >= r0 && j < rend) gb_atomic_combine_g<F>(&s[TILE ? j - r0 : 0], F::mul(a, xv));
          else gb_atomic_combine_g<F>(&y[j], F::mul(a, xv));
        }
      }
    }
    if constexpr (G > 1) gb_group_combine<F, G>(acc, has);
    if (lane == 0 && row < rend && has) {
      if constexpr (TILE) gb_atomic_combine_g<F>(&s[row - r0], acc);
      else gb_atomic_combine_g<F>(&y[row], acc);
    }
  }
  if constexpr (TILE) {
    __syncthreads();
    for (long long r = threadIdx.x; r0 + r < rend; r += 256) gb_atomic_combine_g<F>(&y[r0 + r], s[r]);
  }
}

// t * 2^shift split into (hi, lo): hi = trunc(q), lo = trunc((q - hi) * 2^L).
__device__ __forceinline__ void gb_fx_split(double t, int shift, int L, long long& hi, long long& lo) {
  const double q = ldexp(t, shift);  // exact: a power-of-two scaling into |q| <= 2^S
  const double h = trunc(q);
  hi = (long long)h;
  lo = (long long)trunc(ldexp(q - h, L));  // q - h is exact (the fraction bits of q)
}

__device__ __forceinline__ void gb_fx_add(long long* a, long long v) {
  atomicAdd(reinterpret_cast<unsigned long long*>(a), (unsigned long long)v);
}

// E with 2^E >= |a * x| for every a of A, x of x (*ba = max|A|, *bx = max|x|, as the
// ordered bits of doubles from gb_maxabs); false when the product is not finite.
__device__ __forceinline__ bool gb_fx_exponent(const unsigned long long* __restrict__ ba,
                                               const unsigned long long* __restrict__ bx, int& E) {
  const double ma = __longlong_as_double((long long)*ba);
  const double mx = __longlong_as_double((long long)*bx);
  if (!(isfinite(ma) && isfinite(mx))) return false;
  if (ma == 0.0 || mx == 0.0) { E = 0; return true; }
  E = ilogb(ma) + ilogb(mx) + 2;
  return E <= 1023;
}

template <class F, typename I, typename TA, typename TX, int G, bool TILE, int PASSES>
__global__ void __launch_bounds__(256) gb_spmv_sym_fixed(long long n,
    const I* __restrict__ Up, const I* __restrict__ Uj, const TA* __restrict__ Ux,
    const TX* __restrict__ x, const unsigned long long* __restrict__ ba,
    const unsigned long long* __restrict__ bx, int S, int L,
    long long* __restrict__ hi, long long* __restrict__ lo) {
  constexpr int RPB = 256 / G;
  constexpr int R = RPB * PASSES;
  __shared__ long long sh[TILE ? R : 1], sl[TILE ? R : 1];
  int E = 0;
  const bool fixed = gb_fx_exponent(ba, bx, E);
  const int shift = S - E;
  const long long r0 = (long long)blockIdx.x * R;
  const long long rend = r0 + R < n ? r0 + R : n;
  const bool tile = TILE && fixed;
  if constexpr (TILE) {
    for (int r = threadIdx.x; r < R; r += 256) { sh[r] = 0; sl[r] = 0; }
    __syncthreads();
  }
  const int lane = threadIdx.x % G;
#pragma unroll 1
  for (int q = 0; q < PASSES; ++q) {
    const long long row = r0 + (long long)q * RPB + threadIdx.x / G;
    long long ah = 0, al = 0;
    double af = 0.0;
    if (row < rend) {
      const double xv = (double)F::load(x[row]);
      const long long a1 = (long long)Up[row + 1];
      for (long long p = (long long)Up[row] + lane; p < a1; p += G) {
        const long long j = (long long)Uj[p];
        const double a = (double)F::load(Ux[p]);
        const double own = a * (double)F::load(x[j]);
        long long h, l;
        if (fixed) {
          gb_fx_split(own, shift, L, h, l);
          ah += h; al += l;
          if (j != row) {
            gb_fx_split(a * xv, shift, L, h, l);
            if (tile && j >= r0 && j < rend) {
              atomicAdd(reinterpret_cast<unsigned long long*>(&sh[TILE ? j - r0 : 0]), (unsigned long long)h);
              atomicAdd(reinterpret_cast<unsigned long long*>(&sl[TILE ? j - r0 : 0]), (unsigned long long)l);
            } else {
              gb_fx_add(&hi[j], h); gb_fx_add(&lo[j], l);
            }
          }
        } else {
          af += own;
          if (j != row) atomicAdd(reinterpret_cast<double*>(&hi[j]), a * xv);
        }
      }
    }
#pragma unroll
    for (int off = G / 2; off > 0; off >>= 1) {
      ah += __shfl_xor_sync(0xffffffffu, ah, off, G);
      al += __shfl_xor_sync(0xffffffffu, al, off, G);
      af += __shfl_xor_sync(0xffffffffu, af, off, G);
    }
    if (lane == 0 && row < rend) {
      if (!fixed) {
        atomicAdd(reinterpret_cast<double*>(&hi[row]), af);
      } else if (tile) {
        atomicAdd(reinterpret_cast<unsigned long long*>(&sh[TILE ? row - r0 : 0]), (unsigned long long)ah);
        atomicAdd(reinterpret_cast<unsigned long long*>(&sl[TILE ? row - r0 : 0]), (unsigned long long)al);
      } else {
        gb_fx_add(&hi[row], ah); gb_fx_add(&lo[row], al);
      }
    }
  }
  if constexpr (TILE) {
    __syncthreads();
    if (tile)
      for (long long r = threadIdx.x; r0 + r < rend; r += 256) {
        gb_fx_add(&hi[r0 + r], sh[r]); gb_fx_add(&lo[r0 + r], sl[r]);
      }
  }
}

// y[i] = hi * 2^(E-S) + lo * 2^(E-S-L), one rounding (the carries of lo moved into hi
// first, so both words are exact doubles); hi and lo reset to 0 for the next product.
template <typename W>
__global__ void __launch_bounds__(256) gb_sym_fixed_finish(long long n,
    const unsigned long long* __restrict__ ba,
    const unsigned long long* __restrict__ bx, int S, int L, long long* __restrict__ hi,
    long long* __restrict__ lo, W* __restrict__ y) {
  int E = 0;
  const bool fixed = gb_fx_exponent(ba, bx, E);
  for (long long i = (long long)blockIdx.x * 256 + threadIdx.x; i < n; i += (long long)gridDim.x * 256) {
    const long long h = hi[i];
    if (fixed) {
      const long long l = lo[i];
      const long long carry = l >> L;  // floor: l - carry * 2^L is in [0, 2^L)
      const double a = ldexp((double)(h + carry), E - S);
      const double b = ldexp((double)(l - carry * (1LL << L)), E - S - L);
      y[i] = (W)(a + b);
    } else {
      y[i] = (W)__longlong_as_double(h);
    }
    hi[i] = 0;
    lo[i] = 0;
  }
}

// out[0] = max over v of |v| as the bits of a double (non-negative doubles order as their
// bits; NaN above +Inf). out[0] starts at 0.
template <typename TV>
__global__ void __launch_bounds__(256) gb_maxabs(const TV* __restrict__ v, long long n,
                                                 unsigned long long* __restrict__ out) {
  unsigned long long m = 0;
  for (long long i = (long long)blockIdx.x * 256 + threadIdx.x; i < n; i += (long long)gridDim.x * 256) {
    const double a = fabs((double)v[i]);
    const unsigned long long b = (unsigned long long)__double_as_longlong(a != a ? __longlong_as_double(0x7ff8000000000000LL) : a);
    m = b > m ? b : m;
  }
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) {
    const unsigned long long o = __shfl_xor_sync(0xffffffffu, m, off);
    m = o > m ? o : m;
  }
  if (threadIdx.x % 32 == 0 && m) atomicMax(out, m);
}

// gb_spmv_sym_offsets: the symmetric SpMV without atomics, for a U whose entries lie on few
// diagonals (a stencil's or a band's: offs[0..K) the distinct j - i, ascending, offs[0] may
// be 0), rows sorted. A thread per row j, in a fixed order: its own row of U, then for each
// offset d > 0 the entry U(j - d, j) of the row above, found at the slot an interior row
// holds it in (position k of row j - d), else by bisection (boundary rows). Each result
// is written once (no zeroing, no atomics), its terms combined in the same order on every
// run: bitwise reproducible, compensated (Neumaier) with CSUM for ⊕ = plus on floats. The
// rows above are read again through the caches (a band's are near), so device memory sees
// U, x and y once.
template <class F, typename I, typename TA, typename TX, bool CSUM>
__global__ void __launch_bounds__(256) gb_spmv_sym_offsets(long long n,
    const I* __restrict__ Up, const I* __restrict__ Uj, const TA* __restrict__ Ux,
    const TX* __restrict__ x, const long long* __restrict__ offs, int K,
    typename F::W* __restrict__ y) {
  typedef typename F::W W;
  constexpr bool CS = gb_csum<F, CSUM>::on;
  for (long long j = (long long)blockIdx.x * 256 + threadIdx.x; j < n; j += (long long)gridDim.x * 256) {
    W acc = F::identity(), comp = (W)0;
    int has = 0;
    const long long a1 = (long long)Up[j + 1];
    for (long long p = (long long)Up[j]; p < a1; ++p) {
      const W v = F::mul(F::load(Ux[p]), F::load(x[(long long)Uj[p]]));
      gb_fold<F, CS>(acc, comp, has, v);
    }
    for (int k = 0; k < K; ++k) {
      const long long d = offs[k];
      if (d == 0) continue;
      const long long i = j - d;
      if (i < 0) break;  // offsets ascend: every later row is above row 0 too
      long long lo = (long long)Up[i], hi = (long long)Up[i + 1];
      long long p = lo + k;
      if (!(p < hi && (long long)Uj[p] == j)) {
        p = -1;
        while (lo < hi) {
          const long long mid = lo + (hi - lo) / 2;
          const long long c = (long long)Uj[mid];
          if (c == j) { p = mid; break; }
          if (c < j) lo = mid + 1; else hi = mid;
        }
        if (p < 0) continue;
      }
      const W v = F::mul(F::load(Ux[p]), F::load(x[i]));
      gb_fold<F, CS>(acc, comp, has, v);
    }
    if constexpr (CS) acc = gb_csum_total(acc, comp);
    y[j] = has ? acc : F::identity();
  }
}

// gb_spmv_sym_dia: the offsets kernel on U stored by diagonals (built once per matrix by
// gb_sym_dia_build): dia[k * n + i] holds U(i, i + offs[k]) as its bits, or the hole bits
// gb_dia_hole<TA>::bits where U has no such entry (a signalling NaN no stored value may equal:
// the host checks before it builds). A thread per row j, the same terms in the same order as
// gb_spmv_sym_offsets (its own row by ascending offset, then U(j - d, j) for each d > 0
// ascending), so the results are those bits; but every load is coalesced and independent (no
// row pointers, columns or searches): a stencil's U costs its values and x once.
template <typename T> struct gb_dia_hole;
template <> struct gb_dia_hole<double> {
  typedef unsigned long long B;
  static constexpr B bits = 0x7ff4d1a90e5f0001ULL;
  __device__ static __forceinline__ double value(B b) { return __longlong_as_double((long long)b); }
};
template <> struct gb_dia_hole<float> {
  typedef unsigned int B;
  static constexpr B bits = 0x7fa1d1a9u;
  __device__ static __forceinline__ float value(B b) { return __uint_as_float(b); }
};

template <typename I, typename TA>
__global__ void __launch_bounds__(256) gb_sym_dia_build(long long n, const I* __restrict__ Up,
    const I* __restrict__ Uj, const TA* __restrict__ Ux, const long long* __restrict__ offs,
    typename gb_dia_hole<TA>::B* __restrict__ dia) {
  typedef typename gb_dia_hole<TA>::B B;
  for (long long i = (long long)blockIdx.x * 256 + threadIdx.x; i < n; i += (long long)gridDim.x * 256) {
    int k = 0;
    const long long a1 = (long long)Up[i + 1];
    for (long long p = (long long)Up[i]; p < a1; ++p) {
      const long long d = (long long)Uj[p] - i;
      while (offs[k] < d) ++k;  // every d is among offs, rows ascend (the host checked)
      const TA v = Ux[p];
      dia[(long long)k * n + i] = *reinterpret_cast<const B*>(&v);
    }
  }
}

template <class F, typename TA, typename TX, bool CSUM>
__global__ void __launch_bounds__(256) gb_spmv_sym_dia(long long n,
    const typename gb_dia_hole<TA>::B* __restrict__ dia, const long long* __restrict__ offs, int K,
    const TX* __restrict__ x, typename F::W* __restrict__ y) {
  typedef typename F::W W;
  typedef gb_dia_hole<TA> H;
  constexpr bool CS = gb_csum<F, CSUM>::on;
  __shared__ long long so[128];
  for (int k = threadIdx.x; k < K; k += 256) so[k] = offs[k];
  __syncthreads();
  for (long long j = (long long)blockIdx.x * 256 + threadIdx.x; j < n; j += (long long)gridDim.x * 256) {
    W acc = F::identity(), comp = (W)0;
    int has = 0;
#pragma unroll 4
    for (int k = 0; k < K; ++k) {
      const typename H::B b = dia[(long long)k * n + j];
      if (b == H::bits) continue;
      const W v = F::mul(F::load(H::value(b)), F::load(x[j + so[k]]));
      gb_fold<F, CS>(acc, comp, has, v);
    }
#pragma unroll 4
    for (int k = 0; k < K; ++k) {
      const long long d = so[k];
      if (d == 0) continue;
      const long long i = j - d;
      if (i < 0) break;  // offsets ascend
      const typename H::B b = dia[(long long)k * n + i];
      if (b == H::bits) continue;
      const W v = F::mul(F::load(H::value(b)), F::load(x[i]));
      gb_fold<F, CS>(acc, comp, has, v);
    }
    if constexpr (CS) acc = gb_csum_total(acc, comp);
    y[j] = has ? acc : F::identity();
  }
}

// gb_spgemm_dia: C = A ⊕.⊗ B, unmasked, for A (m × k) and B (k × n) each stored by diagonals
// as gb_sym_dia_build writes them (da[ka * m + i] = A(i, i + aofs[ka]), db[kb * k + r] =
// B(r, r + bofs[kb]), hole bits where absent). C's diagonals are the sums of A's and B's
// offsets: C(i, i + c) = ⊕ over the pairs (ka, kb) with aofs[ka] + bofs[kb] = c of
// A(i, i + a) ⊗ B(i + a, i + c), the pairs of result diagonal t being pairs[pstart[t] ..
// pstart[t + 1]) in ascending a (a fixed order). A warp a row, a lane a result diagonal (32
// at a time, ascending c): a row's entries come out in column order, written by consecutive
// lanes to consecutive places (a thread a row wrote them a row's length apart, and the
// writes, not the loads, set its time: 1.2x cuSPARSE on 7-point Poisson, one H200). Without
// FILL the row's entries are counted (counts[i]); with FILL they are written at Cp[i]. The
// loads are shifted runs of the diagonals, shared through the caches by neighbouring rows.
template <class F, typename TA, typename TB, bool FILL>
__global__ void __launch_bounds__(256) gb_spgemm_dia(long long m, long long kd, long long n,
    const typename gb_dia_hole<TA>::B* __restrict__ da, const long long* __restrict__ aofs,
    const typename gb_dia_hole<TB>::B* __restrict__ db, const long long* __restrict__ bofs,
    const long long* __restrict__ cofs, const int* __restrict__ pstart,
    const int* __restrict__ pa, const int* __restrict__ pb, int KC,
    long long* __restrict__ counts, const long long* __restrict__ Cp, int* __restrict__ Cj,
    typename F::W* __restrict__ Cx) {
  typedef typename F::W W;
  typedef gb_dia_hole<TA> HA;
  typedef gb_dia_hole<TB> HB;
  const int lane = threadIdx.x % 32;
  const long long warps = (long long)gridDim.x * 8;
  for (long long i = (long long)blockIdx.x * 8 + threadIdx.x / 32; i < m; i += warps) {
    long long q = FILL ? Cp[i] : 0;  // the row's next place (the same in every lane)
    for (int t0 = 0; t0 < KC; t0 += 32) {
      const int t = t0 + lane;
      W acc = F::identity();
      int has = 0;
      if (t < KC) {
        const long long j = i + cofs[t];
        if (j >= 0 && j < n) {
          const int p1 = pstart[t + 1];
          for (int p = pstart[t]; p < p1; ++p) {
            const int ka = pa[p];
            const long long r = i + aofs[ka];  // B's row (its column is j)
            if (r < 0 || r >= kd) continue;
            const typename HA::B ab = da[(long long)ka * m + i];
            if (ab == HA::bits) continue;
            const typename HB::B bb = db[(long long)pb[p] * kd + r];
            if (bb == HB::bits) continue;
            if constexpr (FILL) {
              const W v = F::mul(F::load(HA::value(ab)), F::load(HB::value(bb)));
              acc = has ? F::add(acc, v) : v;
              has = 1;
            } else {
              has = 1;
              break;
            }
          }
        }
      }
      const unsigned ballot = __ballot_sync(0xffffffffu, has != 0);
      if constexpr (FILL) {
        if (has) {
          const long long at = q + __popc(ballot & ((1u << lane) - 1u));
          Cj[at] = (int)(i + cofs[t]);
          Cx[at] = acc;
        }
      }
      q += __popc(ballot);
    }
    if constexpr (!FILL) {
      if (lane == 0) counts[i] = q;
    }
  }
}
