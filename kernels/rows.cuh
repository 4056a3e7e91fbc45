// Per-operand and per-row passes of the CUDA runtime's checks and exact post-passes
// (gbdist/backends/cuda/rows.py): validation facts of a CSR operand, row hashes,
// verification of candidate identical rows (and the write of the proven d(a, a)),
// row conditioning, and a count of non-finite result entries. NVRTC-clean: no
// system headers; grid-stride loops, a warp per row where rows are walked.
//   T: the value type (float, double); I: the index type (int, long long).

#define GB_HASH_M1 0x9E3779B97F4A7C15ull
#define GB_HASH_M2 0xBF58476D1CE4E5B9ull
#define GB_HASH_M3 0x94D049BB133111EBull
#define GB_DBL_MAX 1.7976931348623157e308
#define GB_LL_MAX 0x7fffffffffffffffll

// exact.row_hashes' mixer (splitmix64's finaliser), on the device
__device__ __forceinline__ unsigned long long gb_mix(unsigned long long z) {
  z ^= z >> 30;
  z *= GB_HASH_M2;
  z ^= z >> 27;
  z *= GB_HASH_M3;
  return z ^ (z >> 31);
}

// bit pattern of a value as exact._value_bits writes it (-0.0 read as +0.0)
__device__ __forceinline__ unsigned long long gb_bits(float v) {
  return (unsigned long long)__float_as_uint(v == 0.0f ? 0.0f : v);
}
__device__ __forceinline__ unsigned long long gb_bits(double v) {
  return (unsigned long long)__double_as_longlong(v == 0.0 ? 0.0 : v);
}

__device__ __forceinline__ bool gb_finite(double v) { return fabs(v) <= GB_DBL_MAX; }

// facts: [indptr[0], indptr[-1], #decreasing steps, min index, max index, #NaN, #±inf,
//         bits of max |x| over the non-NaN values]; every entry set by gb_facts_init first.
template <typename F>
__global__ void gb_facts_init(F* facts) {
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    facts[0] = 0; facts[1] = 0; facts[2] = 0; facts[3] = GB_LL_MAX;
    facts[4] = -1; facts[5] = 0; facts[6] = 0; facts[7] = 0;
  }
}

// Validation facts of a CSR operand in one pass (nrows >= 0), or of a dense value array
// (nrows < 0: ptr and idx are not read, every value is live). Entries past
// clamp(indptr[-1], 0, n) are not read: the host refuses such an indptr from the facts.
template <typename T, typename I>
__global__ void gb_csr_check(const I* __restrict__ ptr, long long nrows, const I* __restrict__ idx,
                             const T* __restrict__ val, long long n, long long* facts) {
  const long long tid = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  const long long stride = (long long)gridDim.x * blockDim.x;
  long long last = n;
  long long ndec = 0;
  if (nrows >= 0) {
    const long long first = (long long)ptr[0], end = (long long)ptr[nrows];
    if (tid == 0) { facts[0] = first; facts[1] = end; }
    last = end < 0 ? 0 : (end > n ? n : end);
    for (long long r = tid; r < nrows; r += stride) ndec += ptr[r + 1] < ptr[r] ? 1 : 0;
  }
  long long lo = GB_LL_MAX, hi = -1, nnan = 0, ninf = 0;
  double amax = 0.0;
  for (long long p = tid; p < last; p += stride) {
    if (nrows >= 0) {
      const long long i = (long long)idx[p];
      lo = i < lo ? i : lo;
      hi = i > hi ? i : hi;
    }
    const double v = (double)val[p];
    if (v != v) { nnan += 1; continue; }
    const double a = fabs(v);
    if (a > GB_DBL_MAX) ninf += 1;
    amax = a > amax ? a : amax;
  }
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) {
    ndec += __shfl_xor_sync(0xffffffffu, ndec, off);
    const long long l2 = __shfl_xor_sync(0xffffffffu, lo, off);
    const long long h2 = __shfl_xor_sync(0xffffffffu, hi, off);
    lo = l2 < lo ? l2 : lo;
    hi = h2 > hi ? h2 : hi;
    nnan += __shfl_xor_sync(0xffffffffu, nnan, off);
    ninf += __shfl_xor_sync(0xffffffffu, ninf, off);
    const double a2 = __shfl_xor_sync(0xffffffffu, amax, off);
    amax = a2 > amax ? a2 : amax;
  }
  if ((threadIdx.x & 31) == 0) {
    if (ndec) atomicAdd((unsigned long long*)&facts[2], (unsigned long long)ndec);
    if (lo != GB_LL_MAX) atomicMin(&facts[3], lo);
    if (hi != -1) atomicMax(&facts[4], hi);
    if (nnan) atomicAdd((unsigned long long*)&facts[5], (unsigned long long)nnan);
    if (ninf) atomicAdd((unsigned long long*)&facts[6], (unsigned long long)ninf);
    // nonnegative doubles order as their bit patterns
    if (amax > 0.0) atomicMax(&facts[7], __double_as_longlong(amax));
  }
}

// exact.row_hashes: h = mix(Σ_p mix(index·M1 + bits(value)) + length·M3), sums mod 2^64.
template <typename T, typename I>
__global__ void gb_row_hash(const I* __restrict__ ptr, const I* __restrict__ idx,
                            const T* __restrict__ val, long long nrows,
                            unsigned long long* __restrict__ out) {
  const int lane = threadIdx.x & 31;
  long long row = ((long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
  const long long stride = ((long long)gridDim.x * blockDim.x) >> 5;
  for (; row < nrows; row += stride) {
    const I p0 = ptr[row], p1 = ptr[row + 1];
    unsigned long long acc = 0ull;
    for (I p = p0 + lane; p < p1; p += 32)
      acc += gb_mix((unsigned long long)(long long)idx[p] * GB_HASH_M1 + gb_bits(val[p]));
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, off);
    if (lane == 0) out[row] = gb_mix(acc + (unsigned long long)(long long)(p1 - p0) * GB_HASH_M3);
  }
}

// Candidate pairs (pi[t], pj[t]) of equal hashes, verified entry by entry (same length,
// same indices, same value bits); ok[t] = 1 when equal. With write != 0, an equal pair
// whose out[i·ldo + j] is finite gets `value` (exact.apply_self_value).
template <typename T, typename I>
__global__ void gb_pairs_verify(const I* __restrict__ lptr, const I* __restrict__ lidx,
                                const T* __restrict__ lval, const I* __restrict__ rptr,
                                const I* __restrict__ ridx, const T* __restrict__ rval,
                                const long long* __restrict__ pi, const long long* __restrict__ pj,
                                long long npairs, unsigned char* __restrict__ ok, int write,
                                T* out, long long ldo, double value) {
  const int lane = threadIdx.x & 31;
  long long t = ((long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
  const long long stride = ((long long)gridDim.x * blockDim.x) >> 5;
  for (; t < npairs; t += stride) {
    const long long i = pi[t], j = pj[t];
    const long long a0 = (long long)lptr[i], la = (long long)lptr[i + 1] - a0;
    const long long b0 = (long long)rptr[j], lb = (long long)rptr[j + 1] - b0;
    int diff = la != lb;
    if (!diff)
      for (long long p = lane; p < la; p += 32)
        diff |= ((long long)lidx[a0 + p] != (long long)ridx[b0 + p]) ||
                (gb_bits(lval[a0 + p]) != gb_bits(rval[b0 + p]));
    const bool equal = !__any_sync(0xffffffffu, diff);
    if (lane == 0) {
      ok[t] = equal ? 1 : 0;
      if (write && equal) {
        T* at = out + i * ldo + j;
        if (gb_finite((double)*at)) *at = (T)value;
      }
    }
  }
}

// rows.condition_rows for one row per warp: rows storing all k columns shifted by their
// mean (shift != 0, when the sum is finite), then scaled by the power of two 2^s bringing
// the largest |value| into [0.5, 1) (scale != 0; rows.scale_exponents: not for a NaN or
// ±inf row, nor a scaling down that would push the smallest nonzero |value| below the
// data type's normal range, whose smallest normal exponent is `minexp`; a scaling up is
// always exact, also of a row whose largest value is subnormal, where s > 1023 and 2^s is
// no double: ldexp, never the factor); computed in double, written in T.
template <typename T, typename I>
__global__ void gb_condition(const I* __restrict__ ptr, const T* __restrict__ val, long long nrows,
                             long long ncols, int shift, int scale, int minexp,
                             T* __restrict__ out) {
  const int lane = threadIdx.x & 31;
  long long row = ((long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
  const long long stride = ((long long)gridDim.x * blockDim.x) >> 5;
  for (; row < nrows; row += stride) {
    const I p0 = ptr[row], p1 = ptr[row + 1];
    double mean = 0.0;
    if (shift && ncols > 0 && (long long)(p1 - p0) == ncols) {
      double s = 0.0;
      for (I p = p0 + lane; p < p1; p += 32) s += (double)val[p];
#pragma unroll
      for (int off = 16; off > 0; off >>= 1) s += __shfl_xor_sync(0xffffffffu, s, off);
      if (gb_finite(s)) mean = s / (double)ncols;
    }
    int sexp = 0;
    if (scale) {
      double big = 0.0, small = __longlong_as_double(0x7ff0000000000000ll);  // +inf
      int has_nan = 0;
      for (I p = p0 + lane; p < p1; p += 32) {
        const double a = fabs((double)val[p] - mean);
        if (a != a) { has_nan = 1; continue; }
        big = a > big ? a : big;
        if (a > 0.0 && a < small) small = a;
      }
#pragma unroll
      for (int off = 16; off > 0; off >>= 1) {
        const double b2 = __shfl_xor_sync(0xffffffffu, big, off);
        const double s2 = __shfl_xor_sync(0xffffffffu, small, off);
        big = b2 > big ? b2 : big;
        small = s2 < small ? s2 : small;
      }
      has_nan = __any_sync(0xffffffffu, has_nan);
      if (!has_nan && big > 0.0 && gb_finite(big)) {
        int e = 0, es = 0;
        frexp(big, &e);
        frexp(small, &es);
        if (-e > 0 || (-e < 0 && es - e > minexp)) sexp = -e;
      }
    }
    for (I p = p0 + lane; p < p1; p += 32) out[p] = (T)ldexp((double)val[p] - mean, sexp);
  }
}

// count[0] += the number of NaN / ±inf among x[0..n)
template <typename T>
__global__ void gb_count_nonfinite(const T* __restrict__ x, long long n,
                                   unsigned long long* count) {
  const long long tid = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  const long long stride = (long long)gridDim.x * blockDim.x;
  unsigned long long c = 0ull;
  for (long long p = tid; p < n; p += stride) c += gb_finite((double)x[p]) ? 0ull : 1ull;
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) c += __shfl_xor_sync(0xffffffffu, c, off);
  if ((threadIdx.x & 31) == 0 && c) atomicAdd(count, c);
}

// y[0..n) = x[0..n) converted between float and double, subnormals kept: gbdist compiles
// with -ftz=false, CuPy's astype with -ftz=true (which reads or writes them as 0).
template <typename S, typename D>
__global__ void gb_convert(const S* __restrict__ x, long long n, D* __restrict__ y) {
  for (long long p = (long long)blockIdx.x * blockDim.x + threadIdx.x; p < n;
       p += (long long)gridDim.x * blockDim.x)
    y[p] = (D)x[p];
}

// sums[r] = the values of row r added in double, one warp per row in an order fixed by the
// entries' offsets within the row: lane l adds entries l, l + 32, ... in turn, then the 32
// partial sums meet in a fixed butterfly. Two equal rows therefore get equal sums, bit for
// bit, wherever they are stored. Row normalisation divides by them; an atomic scatter-add
// ordered the additions by chance, and two equal rows could come out one rounding apart
// (then not "identical"). One thread per row (the previous form) took 0.65 ms on Tabula
// Muris' 1,067 rows of ~1,800 entries.
template <typename I>
__global__ void gb_row_sums(const I* __restrict__ ptr, const double* __restrict__ val,
                            long long nrows, double* __restrict__ sums) {
  const int lane = threadIdx.x & 31;
  const long long warps = ((long long)gridDim.x * blockDim.x) >> 5;
  for (long long r = ((long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5; r < nrows;
       r += warps) {
    const I p0 = ptr[r], p1 = ptr[r + 1];
    double s = 0.0;
    for (I p = p0 + lane; p < p1; p += 32) s += val[p];
    for (int off = 16; off > 0; off >>= 1) s += __shfl_xor_sync(0xffffffffu, s, off);
    if (lane == 0) sums[r] = s;
  }
}

// count[0] += the number of entries whose column index is not above the previous entry's
// in the same row (0: every row strictly increasing, i.e. sorted without duplicates, the
// canonical form). One warp per row; called only for a matrix not already marked canonical
// and already checked by gb_csr_check (indptr nondecreasing, indices in range).
template <typename I>
__global__ void gb_csr_unsorted(const I* __restrict__ ptr, const I* __restrict__ idx,
                                long long nrows, unsigned long long* count) {
  const int lane = threadIdx.x & 31;
  const long long warps = ((long long)gridDim.x * blockDim.x) >> 5;
  unsigned long long bad = 0;
  for (long long r = ((long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5; r < nrows;
       r += warps) {
    const I p0 = ptr[r], p1 = ptr[r + 1];
    for (I p = p0 + 1 + lane; p < p1; p += 32) bad += idx[p] <= idx[p - 1] ? 1 : 0;
  }
  for (int off = 16; off > 0; off >>= 1) bad += __shfl_xor_sync(0xffffffffu, bad, off);
  if (lane == 0 && bad) atomicAdd(count, bad);
}
