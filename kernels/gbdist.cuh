// gbdist prelude: constants and helpers shared by every generated kernel.
// Compiled by NVRTC (through CuPy) or nvcc; no system headers are included.
#define GB_INF __int_as_float(0x7f800000)
#define GB_NAN __int_as_float(0x7fffffff)

// max/min with NumPy's semantics: a NaN argument gives NaN.
template <typename T> __device__ __forceinline__ T gb_max(T a, T b) {
  return (a != a || a > b) ? a : ((b != b) ? b : (a > b ? a : b));
}
template <typename T> __device__ __forceinline__ T gb_min(T a, T b) {
  return (a != a || a < b) ? a : ((b != b) ? b : (a < b ? a : b));
}
template <typename T> __device__ __forceinline__ T gb_sign(T a) {
  return (T)((a > (T)0) - (a < (T)0));
}

// n / d for formulas over float data evaluated in double (float64 accumulation of
// float32 inputs, printed by codegen for ⊗): n times a reciprocal of d refined from a
// float seed, r0 = 1/float(d) (relative error ≤ 2^-23), by one Newton step in double,
// r = r0 + r0·(1 − d·r0) (relative error ≤ 2^-46 + 2^-53). The quotient's relative
// error is below 2^-45 (3e-14), against IEEE division's 2^-53, at a fraction of its
// cost, and the reciprocal depends on d alone, so x/s and y/s share it. Where d is
// outside float's normal range, or the result is not finite (0/0, ±inf, overflow,
// NaN), it is IEEE division.
__device__ __forceinline__ double gb_div(double n, double d) {
  const float df = (float)d;
  const float af = fabsf(df);
  if (af >= 1.17549435e-38f && af <= 8.50705917e+37f) {  // 2^-126 .. 2^126: 1/df normal
    const double r0 = (double)__frcp_rn(df);
    const double r = fma(r0, fma(-d, r0, 1.0), r0);
    const double q = n * r;
    if (fabs(q) <= 1.7976931348623157e308) return q;
  }
  return n / d;
}

// Reduction of all NACC accumulators across each aligned group of G lanes
// (G = 32: the whole warp), with the spec's combine.
template <class Spec, int G>
__device__ __forceinline__ void gb_group_reduce(typename Spec::A* acc) {
  typedef typename Spec::A T;
#pragma unroll
  for (int off = G / 2; off > 0; off >>= 1) {
    T other[Spec::NACC];
#pragma unroll
    for (int s = 0; s < Spec::NACC; ++s) other[s] = __shfl_xor_sync(0xffffffffu, acc[s], off);
    Spec::combine(acc, other);
  }
}

// First position in [lo, hi) whose column index is >= key (indices sorted).
template <typename I>
__device__ __forceinline__ I gb_lower_bound(const I* __restrict__ idx, I lo, I hi, long long key) {
  while (lo < hi) {
    I mid = lo + (hi - lo) / 2;
    if ((long long)idx[mid] < key) lo = mid + 1; else hi = mid;
  }
  return lo;
}

// Per-row offsets of each k-chunk: out[row * (nch + 1) + c] is the first stored
// entry of `row` whose column is >= c * kchunk (c = nch: the row's end).
template <typename I>
__global__ void gb_chunk_ptr(const I* __restrict__ ptr, const I* __restrict__ idx, long long nrows,
                             long long kchunk, int nch, I* __restrict__ out) {
  const long long total = nrows * (nch + 1);
  for (long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x; t < total;
       t += (long long)gridDim.x * blockDim.x) {
    const long long row = t / (nch + 1);
    const int c = (int)(t % (nch + 1));
    out[t] = (c == nch) ? ptr[row + 1] : gb_lower_bound(idx, ptr[row], ptr[row + 1], (long long)c * kchunk);
  }
}

// Atomic ⊕ into memory (shared or global): atomicAdd for plus, otherwise a
// compare-and-swap loop with the monoid's combine (Comb::op).
template <class Comb>
__device__ __forceinline__ void gb_atomic_combine(float* addr, float v) {
  unsigned int* a = reinterpret_cast<unsigned int*>(addr);
  unsigned int old = *a, assumed;
  do {
    assumed = old;
    const float next = Comb::op(__uint_as_float(assumed), v);
    if (__float_as_uint(next) == assumed) return;
    old = atomicCAS(a, assumed, __float_as_uint(next));
  } while (assumed != old);
}
template <class Comb>
__device__ __forceinline__ void gb_atomic_combine(double* addr, double v) {
  unsigned long long* a = reinterpret_cast<unsigned long long*>(addr);
  unsigned long long old = *a, assumed;
  do {
    assumed = old;
    const double next = Comb::op(__longlong_as_double((long long)assumed), v);
    if ((unsigned long long)__double_as_longlong(next) == assumed) return;
    old = atomicCAS(a, assumed, (unsigned long long)__double_as_longlong(next));
  } while (assumed != old);
}
