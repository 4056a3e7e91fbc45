// Row reduction (norms): one warp per row.
//   out[row] = finish( ⊕_{stored p in row} map(val[p]), K - nnz(row) )
// RS supplies identity(), map(x) (the apply chain), combine(x, y) (the monoid)
// and finish(acc, missing) (the fill value's contribution for unstored entries).
template <class RS, typename I>
__global__ void gb_row_reduce(const I* __restrict__ ptr, const typename RS::T* __restrict__ val,
                              long long nrows, long long K, typename RS::A* __restrict__ out) {
  typedef typename RS::A T;  // the accumulator type: map() widens each stored value
  const int lane = threadIdx.x & 31;
  long long row = ((long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
  const long long stride = ((long long)gridDim.x * blockDim.x) >> 5;
  for (; row < nrows; row += stride) {
    T acc = RS::identity();
    const I p0 = ptr[row], p1 = ptr[row + 1];
    for (I p = p0 + lane; p < p1; p += 32) acc = RS::combine(acc, RS::map(val[p]));
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) acc = RS::combine(acc, __shfl_xor_sync(0xffffffffu, acc, off));
    if (lane == 0) out[row] = RS::finish(acc, K - (long long)(p1 - p0));
  }
}
