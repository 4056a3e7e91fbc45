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

// Warp-wide reduction of all NACC accumulators with the spec's combine.
template <class Spec>
__device__ __forceinline__ void gb_warp_reduce(typename Spec::T* acc) {
  typedef typename Spec::T T;
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) {
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
