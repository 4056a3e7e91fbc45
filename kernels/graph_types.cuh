// Graph kernels: the typecasts and integer arithmetic of the op's domain, for the functors
// printed by gbdist/backends/cuda/graph_codegen.py (between the prelude and the functor).
// They are gbdist/backends/graph_reference.py's rules (docs/graph_api.md, "Types"):
//   - a float cast to an integer type truncates toward zero and saturates, NaN -> 0
//     (SuiteSparse's cast; a bare (long long)v of +inf is not defined by C++);
//   - an integer or bool cast to an integer type wraps (two's complement);
//   - +, -, x and powers in an integer domain wrap like C: computed on the unsigned type,
//     so no signed overflow (undefined in C++) is ever evaluated;
//   - max and min (the max/min monoids, and every Max/Min of a printed formula) are C's
//     fmax/fmin on floats, as SuiteSparse's MAX/MIN: a NaN argument is ignored, NaN only
//     when both are (gb_fmax/gb_fmin; the distance kernels' gb_max/gb_min propagate NaN).
// Host and device: tests/backends/test_cuda_graph_codegen.py runs them on the host.

template <typename I> struct gb_int_limits;
template <> struct gb_int_limits<int> {
  typedef unsigned int U;
  static constexpr int lo = -2147483647 - 1;
  static constexpr int hi = 2147483647;
};
template <> struct gb_int_limits<long long> {
  typedef unsigned long long U;
  static constexpr long long lo = -9223372036854775807LL - 1LL;
  static constexpr long long hi = 9223372036854775807LL;
};

template <typename T> struct gb_is_fp { static constexpr bool value = false; };
template <> struct gb_is_fp<float> { static constexpr bool value = true; };
template <> struct gb_is_fp<double> { static constexpr bool value = true; };

// double -> I: NaN -> 0, >= 2^(bits-1) -> max, <= -2^(bits-1) -> min, else toward zero.
template <typename I> __host__ __device__ __forceinline__ I gb_sat(double v) {
  const double lim = sizeof(I) == 4 ? 2147483648.0 : 9223372036854775808.0;  // exact doubles
  if (v != v) return (I)0;
  if (v >= lim) return gb_int_limits<I>::hi;
  if (v <= -lim) return gb_int_limits<I>::lo;
  return (I)v;
}

// Any value into the integer domain I (GraphBLAS's typecast).
template <typename I, typename T> __host__ __device__ __forceinline__ I gb_to_int(T v) {
  if constexpr (gb_is_fp<T>::value) {
    return gb_sat<I>((double)v);
  } else {
    return (I)(typename gb_int_limits<I>::U)(unsigned long long)(long long)v;
  }
}

template <typename I> __host__ __device__ __forceinline__ I gb_wadd(I a, I b) {
  typedef typename gb_int_limits<I>::U U;
  return (I)((U)a + (U)b);
}
template <typename I> __host__ __device__ __forceinline__ I gb_wmul(I a, I b) {
  typedef typename gb_int_limits<I>::U U;
  return (I)((U)a * (U)b);
}
template <typename I> __host__ __device__ __forceinline__ I gb_wpow(I b, int e) {
  I r = (I)1;
  for (int i = 0; i < e; ++i) r = gb_wmul<I>(r, b);
  return r;
}
template <typename I> __host__ __device__ __forceinline__ I gb_wabs(I a) {
  typedef typename gb_int_limits<I>::U U;
  return a < (I)0 ? (I)((U)0 - (U)a) : a;
}
template <typename I> __host__ __device__ __forceinline__ I gb_imax(I a, I b) { return a > b ? a : b; }
template <typename I> __host__ __device__ __forceinline__ I gb_imin(I a, I b) { return a < b ? a : b; }
template <typename I> __host__ __device__ __forceinline__ I gb_isign(I a) {
  return (I)((a > (I)0) - (a < (I)0));
}

// C's fmax/fmin: a NaN argument is ignored (fmax(1, NaN) = 1), NaN when both are NaN. On
// integer types (the int accumulator of bool work) the plain comparison. The CAS loop of an
// atomic max/min calls these too, so a NaN already in the accumulator is replaced by the
// first number and a NaN candidate never replaces a number.
template <typename T> __host__ __device__ __forceinline__ T gb_fmax(T a, T b) {
  if constexpr (gb_is_fp<T>::value) {
    if constexpr (sizeof(T) == 4) return fmaxf(a, b); else return fmax(a, b);
  } else {
    return a > b ? a : b;
  }
}
template <typename T> __host__ __device__ __forceinline__ T gb_fmin(T a, T b) {
  if constexpr (gb_is_fp<T>::value) {
    if constexpr (sizeof(T) == 4) return fminf(a, b); else return fmin(a, b);
  } else {
    return a < b ? a : b;
  }
}
