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
// one of these is evaluated by it, in float, on the stored float32 values. Each states its
// relative error in units of u = 2^-24 for inputs 0 or within 2^±32 (the backend checks
// the range, as for any float split); docs/cuda.md, "Stable kernels", derives the bounds
// and tests/backends/test_stable_kernels_gpu.py measures them.

// x log(2x/(x+y)) + y log(2y/(x+y)), x, y >= 0, 0 log 0 = 0: the Jensen-Shannon term.
// It is s*psi(d) with s = x + y, d = |x - y|/s and 2 psi(d) = (1+d)log(1+d) + e log e,
// e = 1 - d = 2 min(x, y)/s. As written, its two logs cancel (by 1/d as d -> 0); here
//   d < 0.8:  2 psi = 2 sum_(n>=1) d^(2n)/(2n(2n-1)), 28 terms (truncation < 2^-27),
//             all positive: no cancellation (bound 10.8u);
//   d >= 0.8: (1+d)log(1+d) = (2-e)log(2-e), a polynomial in e <= 0.2 (degree 8), plus
//             e log e with log2 from the MUFU (__log2f: 2 ulp outside [0.5, 2], checked
//             over every float it gets by the GPU test); their magnitudes add to at
//             most 1.87x their sum (at d = 0.8; bound 10.7u);
// then s*psi in float (+2u): relative error < 13u (tests/algebra/test_stable.py derives
// it and emulates this code). Within 2^±32 nothing overflows or underflows (d >= 2^-25).
// An accurate logf (no flush to zero) cost 11-16% more on the H100.
__device__ __forceinline__ double gb_js_term(float x, float y) {
  const float s = x + y;
  if (x == 0.0f || y == 0.0f) return (double)s * 0.69314718055994530942;  // x log 2, y log 2, 0
  const float d = fabsf(x - y) / s;
  float psi2;  // 2 psi(d)
  if (d < 0.8f) {
    const float c[28] = {  // 1/(2n(2n-1)), rounded to float
        5.000000000e-01f, 8.333333582e-02f, 3.333333507e-02f, 1.785714366e-02f, 1.111111138e-02f,
        7.575757802e-03f, 5.494505633e-03f, 4.166666884e-03f, 3.267973894e-03f, 2.631579060e-03f,
        2.164502162e-03f, 1.811594237e-03f, 1.538461540e-03f, 1.322751283e-03f, 1.149425283e-03f,
        1.008064486e-03f, 8.912655758e-04f, 7.936508046e-04f, 7.112375461e-04f, 6.410256610e-04f,
        5.807200796e-04f, 5.285412190e-04f, 4.830917751e-04f, 4.432623973e-04f, 4.081632651e-04f,
        3.770739131e-04f, 3.494060074e-04f, 3.246753186e-04f};
    const float t = d * d;
    float p = c[27];
#pragma unroll
    for (int n = 26; n >= 0; --n) p = fmaf(p, t, c[n]);
    psi2 = (2.0f * t) * p;
  } else {
    const float c[9] = {  // (2-e)log(2-e) = 2 log 2 - (1 + log 2) e + sum_(k>=2) e^k/(2^(k-1) k(k-1))
        1.386294365e+00f, -1.693147182e+00f, 2.500000000e-01f, 4.166666791e-02f, 1.041666698e-02f,
        3.125000047e-03f, 1.041666721e-03f, 3.720238165e-04f, 1.395089348e-04f};
    const float e = (2.0f * fminf(x, y)) / s;
    float p = c[8];
#pragma unroll
    for (int n = 7; n >= 0; --n) p = fmaf(p, e, c[n]);
    psi2 = p + (e > 0.0f ? e * (__log2f(e) * 0.693147182f) : 0.0f);
  }
  return (double)((0.5f * s) * psi2);
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

// The cells below the diagonal of a square n x n tile from those above it: out[r][c] =
// out[c][r] for r > c. A diagonal tile of a self-join under a metric proven symmetric is
// computed on and above the diagonal only (gb_scatter's and gb_gather's upper); this
// completes it, in 32 x 32 blocks through shared memory so that reads and writes are both
// coalesced. Grid: (ceil(n / 32), ceil(n / 32)) blocks of 32 x 8 threads; the blocks above
// the diagonal return at once.
template <class Spec>
__global__ void gb_mirror_lower(typename Spec::T* __restrict__ out, long long n) {
  typedef typename Spec::T T;
  __shared__ T tile[32][33];
  const long long br = blockIdx.y, bc = blockIdx.x;  // the block of rows and of columns written
  if (bc > br) return;
  for (int y = threadIdx.y; y < 32; y += blockDim.y) {  // read the upper block (bc, br)
    const long long r = bc * 32 + y, c = br * 32 + threadIdx.x;
    if (r < n && c < n) tile[y][threadIdx.x] = out[r * n + c];
  }
  __syncthreads();
  for (int y = threadIdx.y; y < 32; y += blockDim.y) {  // write its transpose below
    const long long r = br * 32 + y, c = bc * 32 + threadIdx.x;
    if (r < n && c < n && r > c) out[r * n + c] = tile[threadIdx.x][y];
  }
}

// Atomic max / min of floats with integer atomics, one instruction in shared memory
// where the compare-and-swap loop below reads, compares and retries: with its sign bit
// clear a float's bits order as a signed int, with it set as an unsigned int reversed.
// NaN is made +NaN for max (bits above +inf) and -NaN for min, so it wins as gb_max and
// gb_min propagate it; the accumulator never holds any other NaN.
__device__ __forceinline__ void gb_atomic_max(float* addr, float v) {
  if (v != v) v = __int_as_float(0x7fc00000);
  if (!signbit(v)) atomicMax(reinterpret_cast<int*>(addr), __float_as_int(v));
  else atomicMin(reinterpret_cast<unsigned int*>(addr), __float_as_uint(v));
}
__device__ __forceinline__ void gb_atomic_min(float* addr, float v) {
  if (v != v) v = __int_as_float((int)0xffc00000u);
  if (!signbit(v)) atomicMin(reinterpret_cast<int*>(addr), __float_as_int(v));
  else atomicMax(reinterpret_cast<unsigned int*>(addr), __float_as_uint(v));
}
__device__ __forceinline__ void gb_atomic_max(double* addr, double v) {
  if (v != v) v = __longlong_as_double(0x7ff8000000000000LL);
  if (!signbit(v)) atomicMax(reinterpret_cast<long long*>(addr), __double_as_longlong(v));
  else atomicMin(reinterpret_cast<unsigned long long*>(addr), (unsigned long long)__double_as_longlong(v));
}
__device__ __forceinline__ void gb_atomic_min(double* addr, double v) {
  if (v != v) v = __longlong_as_double((long long)0xfff8000000000000ULL);
  if (!signbit(v)) atomicMin(reinterpret_cast<long long*>(addr), __double_as_longlong(v));
  else atomicMax(reinterpret_cast<unsigned long long*>(addr), (unsigned long long)__double_as_longlong(v));
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
