// Dense union: a two-pass union's product as a GEMM-shaped loop over every column.
//
// Both operands are densified once per call (gb_densify with gb_raw_map: the raw stored
// values, 0 where unstored, row-major with leading dimension K), so that each output
// (i, j) is ⊕ over k = 0..K-1 of Spec::step(a_ik, b_jk): no column indices are read and
// the union needs one pass. A block owns a (16·TM) × (16·TN) output tile; its 256 threads
// load both sides' K-chunks of BK columns into shared memory (transposed: [k][row], padded
// by one so the stores of a warp, one row's consecutive columns, hit distinct banks), and
// each thread keeps a TM × TN block of accumulators in registers: rows ty + 16·a, columns
// tx + 16·b (consecutive threads read consecutive B rows: no bank conflicts; writes of a
// half-warp are consecutive).
//
// Why this equals the gather kernel's two passes (codegen.Generated.dense_union offers it
// only where it does): ⊕ is idempotent (commutative, associative), so seeing a column
// stored on both sides once instead of twice changes nothing; a column stored on one side
// gives the same f(x, 0) or f(0, y) that gather evaluates against its dense row's zero; a
// column stored in neither row gives f(0, 0), which codegen has checked equals, as
// written, the plan's corner C (absorbed: the epilogue ⊕s C anyway) or the ⊕ identity.
// The same argument makes padding harmless: rows past the tile and columns past the
// K-range load 0 and are evaluated as f(0, 0), and their outputs are not written.
//
// Split K (gridDim.z > 1): block z covers columns [z·kper, min(K, (z+1)·kper)) and writes
// its raw accumulators to tmp (z-major: tmp[(z·NACC + s)·plane + o]); gb_dense_union_finish
// ⊕-combines them in z order and runs the epilogue. gridDim.z = 1: the epilogue here.
//
// Types: Spec::T the stored values (the dense copies, shared memory, out); Spec::A the
// accumulators (tmp, colred, rowred, the epilogue). out is n_left × n_right row-major.
// Dynamic shared memory: BK · (16·TM + 1 + 16·TN + 1) · sizeof(T).

template <class Spec>
struct gb_raw_map {  // gb_densify's Map for the raw stored values (no apply chain)
  typedef typename Spec::T T;
  typedef typename Spec::T A;
  __device__ static A map(T x) { return x; }
};

template <class Spec, int TM, int TN, int BK>
__global__ void __launch_bounds__(256)
gb_dense_union(const typename Spec::T* __restrict__ da, const typename Spec::T* __restrict__ db,
               long long n_left, long long n_right, long long K, long long kper,
               typename Spec::T* __restrict__ out, typename Spec::A* __restrict__ tmp,
               const typename Spec::A* __restrict__ colred,
               const typename Spec::A* __restrict__ rowred,
               const typename Spec::A* __restrict__ wts) {
  typedef typename Spec::T T;
  typedef typename Spec::A A;
  constexpr int BM = 16 * TM, BN = 16 * TN;
  constexpr int LA = BM + 1, LB = BN + 1;  // padded rows of the transposed tiles
  extern __shared__ __align__(16) unsigned char gb_smem[];
  T* as = reinterpret_cast<T*>(gb_smem);  // as[kk * LA + r]
  T* bs = as + BK * LA;                   // bs[kk * LB + c]

  const int t = threadIdx.x;
  const int tx = t & 15, ty = t >> 4;
  const long long i0 = (long long)blockIdx.y * BM;
  const long long j0 = (long long)blockIdx.x * BN;
  const long long kb = (long long)blockIdx.z * kper;
  const long long ke = (kb + kper < K) ? kb + kper : K;

  A acc[TM][TN][Spec::NACC];
#pragma unroll
  for (int a = 0; a < TM; ++a)
#pragma unroll
    for (int b = 0; b < TN; ++b) Spec::init(acc[a][b]);

  for (long long k0 = kb; k0 < ke; k0 += BK) {
    // load: element e of a tile is (row e / BK, column e % BK): a warp reads one row's
    // BK consecutive values (coalesced); 0 past the rows or the K-range
    for (int e = t; e < BM * BK; e += 256) {
      const int r = e / BK, kk = e % BK;
      const long long i = i0 + r, k = k0 + kk;
      as[kk * LA + r] = (i < n_left && k < ke) ? da[i * K + k] : (T)0;
    }
    for (int e = t; e < BN * BK; e += 256) {
      const int c = e / BK, kk = e % BK;
      const long long j = j0 + c, k = k0 + kk;
      bs[kk * LB + c] = (j < n_right && k < ke) ? db[j * K + k] : (T)0;
    }
    __syncthreads();
#pragma unroll 4
    for (int kk = 0; kk < BK; ++kk) {
      T x[TM], y[TN];
#pragma unroll
      for (int a = 0; a < TM; ++a) x[a] = as[kk * LA + ty + 16 * a];
#pragma unroll
      for (int b = 0; b < TN; ++b) y[b] = bs[kk * LB + tx + 16 * b];
#pragma unroll
      for (int a = 0; a < TM; ++a)
#pragma unroll
        for (int b = 0; b < TN; ++b) Spec::step(acc[a][b], x[a], y[b], wts, K, k0 + kk);
    }
    __syncthreads();
  }

  const long long plane = n_left * n_right;
#pragma unroll
  for (int a = 0; a < TM; ++a) {
    const long long i = i0 + ty + 16 * a;
    if (i >= n_left) continue;
#pragma unroll
    for (int b = 0; b < TN; ++b) {
      const long long j = j0 + tx + 16 * b;
      if (j >= n_right) continue;
      const long long o = i * n_right + j;
      if (gridDim.z == 1) {
        out[o] = (T)Spec::epilogue(acc[a][b], i, j, n_left, n_right, colred, rowred, K);
      } else {
#pragma unroll
        for (int s = 0; s < Spec::NACC; ++s)
          tmp[((long long)blockIdx.z * Spec::NACC + s) * plane + o] = acc[a][b][s];
      }
    }
  }
}

// out[o] = epilogue(⊕ over z of tmp[z]) for each output o (after a split-K gb_dense_union).
template <class Spec>
__global__ void gb_dense_union_finish(const typename Spec::A* __restrict__ tmp, int nsplit,
                                      long long n_left, long long n_right, long long K,
                                      typename Spec::T* __restrict__ out,
                                      const typename Spec::A* __restrict__ colred,
                                      const typename Spec::A* __restrict__ rowred) {
  typedef typename Spec::T T;
  typedef typename Spec::A A;
  const long long plane = n_left * n_right;
  for (long long o = (long long)blockIdx.x * blockDim.x + threadIdx.x; o < plane;
       o += (long long)gridDim.x * blockDim.x) {
    A v[Spec::NACC], w[Spec::NACC];
#pragma unroll
    for (int s = 0; s < Spec::NACC; ++s) v[s] = tmp[s * plane + o];
    for (int z = 1; z < nsplit; ++z) {
#pragma unroll
      for (int s = 0; s < Spec::NACC; ++s) w[s] = tmp[((long long)z * Spec::NACC + s) * plane + o];
      Spec::combine(v, w);
    }
    out[o] = (T)Spec::epilogue(v, o / n_right, o % n_right, n_left, n_right, colred, rowred, K);
  }
}
