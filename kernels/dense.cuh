// Dense tile support: the expansion Σ_r φ_r(x)·ψ_r(y) turns an intersection
// into one GEMM over densified, transformed operands (cuBLAS, through CuPy;
// in the accumulator type, so DGEMM when float data accumulates in double),
// after which gb_epilogue finishes every output entry.

// out[row * ld + col0 + k] = Map::map(value) for each stored entry; the
// unstored entries must already hold Map::fill() (see the caller).
template <class Map, typename I>
__global__ void gb_densify(const I* __restrict__ ptr, const I* __restrict__ idx,
                           const typename Map::T* __restrict__ val, long long nrows,
                           long long ld, long long col0, typename Map::A* __restrict__ out) {
  const int lane = threadIdx.x & 31;
  long long row = ((long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
  const long long stride = ((long long)gridDim.x * blockDim.x) >> 5;
  for (; row < nrows; row += stride) {
    for (I p = ptr[row] + (I)lane; p < ptr[row + 1]; p += 32)
      out[row * ld + col0 + (long long)idx[p]] = Map::map(val[p]);
  }
}

// out[o] = epilogue(accbuf[s * plane + o] for each accumulator s).
template <class Spec>
__global__ void gb_epilogue(const typename Spec::A* __restrict__ accbuf, long long n_left,
                            long long n_right, long long K, typename Spec::T* __restrict__ out,
                            const typename Spec::A* __restrict__ colred,
                            const typename Spec::A* __restrict__ rowred) {
  typedef typename Spec::T T;
  typedef typename Spec::A A;
  const long long plane = n_left * n_right;
  for (long long o = (long long)blockIdx.x * blockDim.x + threadIdx.x; o < plane;
       o += (long long)gridDim.x * blockDim.x) {
    A v[Spec::NACC];
#pragma unroll
    for (int s = 0; s < Spec::NACC; ++s) v[s] = accbuf[s * plane + o];
    out[o] = (T)Spec::epilogue(v, o / n_right, o % n_right, n_left, n_right, colred, rowred, K);
  }
}
