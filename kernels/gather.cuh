// Gather: the semiring product of two CSR operands, fused with the epilogue.
//
// A block scatters R rows of the *dense side* into shared memory (raw stored
// values; unstored entries read 0, which the spec's folded apply chain maps to
// the fill value), one k-chunk of columns at a time. Its warps then walk rows
// of the *streamed side*: each lane takes stored entries (k, v) of the row and
// combines v with the R dense rows' values at k. A warp-wide ⊕ finishes the R
// results, and lane r writes row r's value.
//
// Why this is correct for each strategy (the algebra decides; see plan.py):
//  * intersection (data semantics): f(fill, y) is the ⊕ identity (proven), so
//    streamed entries whose column the dense row lacks contribute nothing, and
//    dense entries the streamed row lacks are never visited;
//  * intersection (structural): the `stored` mask skips absent dense entries;
//  * union correction: g(fill, y) = 0 (proven), as above;
//  * two-pass union (idempotent ⊕): MODE 1 walks the right operand's entries
//    against dense left rows; MODE 2 swaps roles (dense right rows, streamed
//    left rows) and ⊕-combines with MODE 1's result. Columns stored on both
//    sides are seen twice, which an idempotent ⊕ absorbs;
//  * two-pass union with ⊕ = plus (Spec::SKIP_SHARED: the accuracy rule's direct
//    sum, runtime/accuracy.py): MODE 2 skips the columns the dense (right) row
//    stores, which MODE 1 has summed, so each column of the union counts once;
//  * a weighted step (compiler/colfactor.py: ⊕_c κ(w_c)·f₁(a_c, b_c), ⊕ = plus,
//    f₁(fill, fill) = 0): the same plus over the union, each term multiplied by
//    κ(w) at its column, read from row s of wts (Spec::NW × K, the accumulator type)
//    by Spec::step at the pair's column k0 + k; a column stored in neither row adds 0.
//
// G lanes work on one streamed row (G = 32, 16 or 8, chosen from the average
// stored entries per row and chunk), so short rows do not leave lanes idle.
// With k-chunks, dcp/scp hold each row's per-chunk offsets (gb_chunk_ptr).
//
// MODE 0: single pass, epilogue -> out.   MODE 1: raw accumulators -> tmp.
// MODE 2: combine with tmp, epilogue -> out.
// When K does not fit in one chunk, partial accumulators live in tmp between
// chunks and the epilogue runs after the last chunk.
//
// upper (a diagonal tile of a self-join under a metric proven symmetric: left and right
// are the same rows): only the cells (i, j) with j >= i are needed. MODE 0/1 blocks stream
// only the right rows from their first dense row on, MODE 2 blocks only the left rows up
// to their last dense row; cells below the diagonal are left unwritten (or hold a partial
// value: rows of one block) for the caller's mirror (gb_mirror_lower), which overwrites
// every one of them. About half the pairs of the tile.
//
// Types: Spec::T is the stored values' type (data, shared memory, out), Spec::A
// the accumulators' (tmp, colred, rowred, the epilogue): double for float data
// unless the caller asks for float accumulation.
// Layout: out is n_left x n_right (row-major); tmp is NACC x n_left x n_right;
// colred is (#col reductions) x n_left; rowred is (#row reductions) x n_right;
// wts is Spec::NW x K (unread when Spec::NW = 0).
template <class Spec, int R, int MODE, int G, typename I>
__global__ void __launch_bounds__(512)
gb_gather(const I* __restrict__ dptr, const I* __restrict__ didx,
          const typename Spec::T* __restrict__ dval, long long n_dense,
          const I* __restrict__ sptr, const I* __restrict__ sidx,
          const typename Spec::T* __restrict__ sval, long long n_stream,
          long long K, long long kchunk, const I* __restrict__ dcp, const I* __restrict__ scp,
          typename Spec::T* __restrict__ out, typename Spec::A* __restrict__ tmp,
          long long n_left, long long n_right,
          const typename Spec::A* __restrict__ colred, const typename Spec::A* __restrict__ rowred,
          const typename Spec::A* __restrict__ wts, int upper) {
  typedef typename Spec::T T;
  typedef typename Spec::A A;
  extern __shared__ __align__(16) unsigned char gb_smem[];
  T* dense = reinterpret_cast<T*>(gb_smem);
  unsigned char* stored = gb_smem + sizeof(T) * R * kchunk;

  const int lane = threadIdx.x & 31;
  const int glane = lane % G;  // lane within its group
  const int group = lane / G;  // group within the warp
  const int warp = threadIdx.x >> 5;
  const int nwarps = blockDim.x >> 5;
  const int per_warp = 32 / G;
  const int nch = (int)((K + kchunk - 1) / kchunk);
  const long long d0 = (long long)blockIdx.x * R;
  const long long per = (n_stream + gridDim.y - 1) / gridDim.y;
  long long s0 = (long long)blockIdx.y * per;
  long long s1 = (s0 + per < n_stream) ? s0 + per : n_stream;
  if (upper) {  // MODE 0/1: right rows j >= the block's first row; MODE 2: left rows <= its last
    if (MODE == 2) s1 = (s1 < d0 + R) ? s1 : d0 + R;
    else s0 = (s0 > d0) ? s0 : d0;
  }
  const bool chunked = kchunk < K;
  const long long plane = n_left * n_right;

  for (long long k0 = 0; k0 < K; k0 += kchunk) {
    const int c = (int)(k0 / kchunk);
    for (long long t = threadIdx.x; t < (long long)R * kchunk; t += blockDim.x) {
      dense[t] = (T)0;
      if (Spec::STRUCTURAL || Spec::SKIP_SHARED) stored[t] = 0;
    }
    __syncthreads();
#pragma unroll
    for (int r = 0; r < R; ++r) {
      const long long d = d0 + r;
      if (d < n_dense) {
        const I p0 = chunked ? dcp[d * (nch + 1) + c] : dptr[d];
        const I p1 = chunked ? dcp[d * (nch + 1) + c + 1] : dptr[d + 1];
        for (I p = p0 + (I)threadIdx.x; p < p1; p += (I)blockDim.x) {
          const long long k = (long long)didx[p] - k0;
          dense[r * kchunk + k] = dval[p];
          if (Spec::STRUCTURAL || Spec::SKIP_SHARED) stored[r * kchunk + k] = 1;
        }
      }
    }
    __syncthreads();

    const bool first = (k0 == 0);
    const bool last = (k0 + kchunk >= K);
    // Every lane of a warp runs the same iterations (the group reduction
    // shuffles across the warp); a group past the end walks an empty row.
    for (long long jb = s0 + (long long)warp * per_warp; jb < s1; jb += (long long)nwarps * per_warp) {
      const long long j = jb + group;
      const bool active = j < s1;
      A acc[R][Spec::NACC];
#pragma unroll
      for (int r = 0; r < R; ++r) Spec::init(acc[r]);
      I p0 = 0, p1 = 0;
      if (active) {
        p0 = chunked ? scp[j * (nch + 1) + c] : sptr[j];
        p1 = chunked ? scp[j * (nch + 1) + c + 1] : sptr[j + 1];
      }
      for (I p = p0 + (I)glane; p < p1; p += G) {
        const long long k = (long long)sidx[p] - k0;
        const T v = sval[p];
#pragma unroll
        for (int r = 0; r < R; ++r) {
          if (Spec::STRUCTURAL && !stored[r * kchunk + k]) continue;
          if (MODE == 2 && Spec::SKIP_SHARED && stored[r * kchunk + k]) continue;
          const T dv = dense[r * kchunk + k];
          if (MODE == 2) Spec::step_swapped(acc[r], dv, v, wts, K, k0 + k);
          else Spec::step(acc[r], dv, v, wts, K, k0 + k);
        }
      }
#pragma unroll
      for (int r = 0; r < R; ++r) gb_group_reduce<Spec, G>(acc[r]);
#pragma unroll
      for (int r = 0; r < R; ++r) {
        const long long d = d0 + r;
        if (!active || glane != r || d >= n_dense) continue;
        const long long i = (MODE == 2) ? j : d;
        const long long jj = (MODE == 2) ? d : j;
        const long long o = i * n_right + jj;
        if (MODE == 2 || !first) {
          A prev[Spec::NACC];
#pragma unroll
          for (int s = 0; s < Spec::NACC; ++s) prev[s] = tmp[s * plane + o];
          Spec::combine(acc[r], prev);
        }
        if (MODE != 1 && last) {
          out[o] = (T)Spec::epilogue(acc[r], i, jj, n_left, n_right, colred, rowred, K);
        } else {
#pragma unroll
          for (int s = 0; s < Spec::NACC; ++s) tmp[s * plane + o] = acc[r][s];
        }
      }
    }
    __syncthreads();
  }
}
