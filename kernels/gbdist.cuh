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

// Stable kernels (gbdist/algebra/stable.py): a formula the compiler has proven equal to
// one of these is evaluated by it, in float where the stated bound allows, on the
// accumulator-type (double) values. Each states its relative error in units of
// u = 2^-24; docs/cuda.md, "Stable kernels", derives the bounds.

// x log(2x/(x+y)) + y log(2y/(x+y)), x, y >= 0, 0 log 0 = 0: the Jensen-Shannon term.
// With s = x + y and d = |x - y|/s it is s*psi(d), psi(d) = ((1+d)log(1+d) +
// (1-d)log(1-d))/2 = sum_{n>=1} d^(2n)/(2n(2n-1)): s, d, 1 + d and 1 - d = 2min(x,y)/s
// in double (relative error < 2^-44), psi in float:
//   d < 0.7: the series to n = 18, all terms positive (truncation < 0.13u), Horner in
//            t = d^2: relative error < 5.8u;
//   d >= 0.7: the logs, whose two terms cancel by at most 2.3x there: < 13.8u.
// So < 14u relative, plus 2^-150*s absolute where t = d^2 underflows (d < 2^-63).
// In double, the formula as written costs two double logs and two divisions.
__device__ __forceinline__ double gb_js_term(double x, double y) {
  const double s = x + y;
  if (x == 0.0 || y == 0.0) return s * 0.69314718055994530942;  // x log 2, y log 2, or 0
  const double d = gb_div(fabs(x - y), s);
  const float a = (float)d;
  float psi;
  if (a < 0.7f) {
    const float c[18] = {
    5.000000000e-01f, 8.333333582e-02f, 3.333333507e-02f, 1.785714366e-02f, 1.111111138e-02f, 7.575757802e-03f,
    5.494505633e-03f, 4.166666884e-03f, 3.267973894e-03f, 2.631579060e-03f, 2.164502162e-03f, 1.811594237e-03f,
    1.538461540e-03f, 1.322751283e-03f, 1.149425283e-03f, 1.008064486e-03f, 8.912655758e-04f, 7.936508046e-04f};  // 1/(2n(2n-1)), rounded to float
    const float t = a * a;
    float p = c[17];
#pragma unroll
    for (int n = 16; n >= 0; --n) p = fmaf(p, t, c[n]);
    psi = t * p;
  } else {
    const float up = (float)(1.0 + d);
    const float dn = (float)gb_div(2.0 * fmin(x, y), s);  // 1 - d, without its cancellation
    psi = 0.5f * (up * logf(up) + (dn > 0.0f ? dn * logf(dn) : 0.0f));
  }
  return s * (double)psi;
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
