// Runs kernels/graph_algorithms.cuh on the host, one CUDA thread after another (threads in
// any order the caller picks): the union-find kernels need no warp intrinsics. The warp
// intrinsics are defined only so that the file compiles.
#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <vector>
#include <algorithm>
#include <random>
#define __global__
#define __device__
#define __forceinline__ inline
#define __launch_bounds__(x)
#define __restrict__
#define __shared__ static
struct gb_dim { unsigned x; };
static gb_dim threadIdx, blockIdx, blockDim, gridDim;
template <class T> T __ldcg(const T* p) { return *p; }
template <class T> T __ldcg(T* p) { return *p; }
inline int atomicCAS(int* a, int e, int d) { int o = *a; if (o == e) *a = d; return o; }
inline unsigned long long atomicCAS(unsigned long long* a, unsigned long long e, unsigned long long d) {
  unsigned long long o = *a; if (o == e) *a = d; return o; }
inline unsigned atomicAdd(unsigned* a, unsigned v) { unsigned o = *a; *a += v; return o; }
inline unsigned long long atomicAdd(unsigned long long* a, unsigned long long v) {
  unsigned long long o = *a; *a += v; return o; }
template <class T> T __shfl_xor_sync(unsigned, T v, int) { return v; }  // compile only
inline unsigned __ballot_sync(unsigned, bool) { return 0; }             // compile only
inline int __popc(unsigned v) { return __builtin_popcount(v); }
inline void __syncthreads() {}
inline void __threadfence() {}
