// Row binning for the graph kernels (issue 12): bin each row by a key (a product bound, an
// exact count, a degree) against ascending edges, then gather the rows of each bin together.
// Two launches and one host read of the per-bin counts; rows inside a bin are in no
// particular order (each row is computed on its own). At most 31 edges.
//
// gb_bin_count: bin[i] = the first b with keys[i] <= edges[b], ne when above the last edge,
// -1 when skip_zero and keys[i] == 0; counts[b] += rows of bin b.
// gb_bin_scatter: out[cursor[b]++] = i for the rows of bin b (cursor starts at the bins' offsets).

extern "C" __global__ void __launch_bounds__(256) gb_bin_count(
    const long long* __restrict__ keys, long long m, const long long* __restrict__ edges, int ne,
    int skip_zero, int* __restrict__ bin, unsigned long long* __restrict__ counts) {
  __shared__ unsigned int local[32];
  for (int q = threadIdx.x; q <= ne; q += blockDim.x) local[q] = 0;
  __syncthreads();
  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < m) {
    const long long k = keys[i];
    int b = -1;
    if (!(skip_zero && k == 0)) {
      b = 0;
      while (b < ne && k > edges[b]) ++b;
      atomicAdd(&local[b], 1u);
    }
    bin[i] = b;
  }
  __syncthreads();
  for (int q = threadIdx.x; q <= ne; q += blockDim.x) {
    if (local[q]) atomicAdd(&counts[q], (unsigned long long)local[q]);
  }
}

extern "C" __global__ void __launch_bounds__(256) gb_bin_scatter(
    const int* __restrict__ bin, long long m, int ne, unsigned long long* __restrict__ cursor,
    long long* __restrict__ out) {
  __shared__ unsigned int local[32];
  __shared__ unsigned long long base[32];
  for (int q = threadIdx.x; q <= ne; q += blockDim.x) local[q] = 0;
  __syncthreads();
  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  const int b = i < m ? bin[i] : -1;
  unsigned int mine = 0;
  if (b >= 0) mine = atomicAdd(&local[b], 1u);
  __syncthreads();
  for (int q = threadIdx.x; q <= ne; q += blockDim.x) {
    if (local[q]) base[q] = atomicAdd(&cursor[q], (unsigned long long)local[q]);
  }
  __syncthreads();
  if (b >= 0) out[base[b] + mine] = i;
}
