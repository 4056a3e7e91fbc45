// Runs kernels/graph_algorithms.cuh on the host. Emulates a CUDA block with one std::thread per CUDA thread: warp intrinsics through a
// per-warp barrier, __syncthreads through a block barrier.
#include <cstdio>
#include <mutex>
#include <string>
#include <cstdlib>
#include <cmath>
#include <vector>
#include <thread>
#include <barrier>
#include <atomic>
#include <cstring>
#define __global__
#define __device__
#define __forceinline__ inline
#define __launch_bounds__(x)
#define __restrict__
#define __shared__ static
struct gb_dim { unsigned x; };
static thread_local gb_dim threadIdx;
static gb_dim blockIdx, blockDim, gridDim;
static std::barrier<>* gb_block_bar;
template <class T> T __ldcg(const T* p) { return *p; }
static std::mutex gb_atomic_mu;
inline int atomicCAS(int* a, int e, int d) { std::lock_guard<std::mutex> g(gb_atomic_mu); int o = *a; if (o == e) *a = d; return o; }
inline unsigned long long atomicCAS(unsigned long long* a, unsigned long long e, unsigned long long d) {
  std::lock_guard<std::mutex> g(gb_atomic_mu); unsigned long long o = *a; if (o == e) *a = d; return o; }
inline unsigned atomicAdd(unsigned* a, unsigned v) { std::lock_guard<std::mutex> g(gb_atomic_mu); unsigned o = *a; *a += v; return o; }
inline unsigned long long atomicAdd(unsigned long long* a, unsigned long long v) {
  std::lock_guard<std::mutex> g(gb_atomic_mu); unsigned long long o = *a; *a += v; return o; }
#include "warp.h"
inline void __syncthreads() { gb_block_bar->arrive_and_wait(); }
inline void __threadfence() {}
template <class F> void gb_launch(unsigned grid, unsigned block, F f) {
  gridDim.x = grid; blockDim.x = block;
  for (unsigned b = 0; b < grid; ++b) {
    blockIdx.x = b;
    std::barrier<> bb(block); gb_block_bar = &bb;
    for (unsigned w = 0; w < block / 32; ++w) gb_warp_bar[w] = new std::barrier<>(32);
    std::vector<std::thread> ts;
    for (unsigned t = 0; t < block; ++t) ts.emplace_back([t, &f] { threadIdx.x = t; f(); });
    for (auto& t : ts) t.join();
    for (unsigned w = 0; w < block / 32; ++w) delete gb_warp_bar[w];
  }
}
