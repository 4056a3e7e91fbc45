// Runs the generated product kernels (kernels/gather.cuh with a generated Spec) on the
// host: a std::thread per CUDA thread of a block, blocks one after another over a 2-D or
// 3-D grid (gb_launch2, gb_launch3), warp shuffles through a per-warp barrier,
// __syncthreads through a block barrier, the dynamic shared memory one array the block's
// threads share. Built-ins the generated source names are defined so that it compiles with
// g++ (C++20: std::barrier).
#pragma once
#include <algorithm>
#include <atomic>
#include <barrier>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <math.h>
#include <mutex>
#include <thread>
#include <vector>
#define __global__
#define __device__
#define __forceinline__ inline
#define __launch_bounds__(x)
#define __align__(n)
#define __shared__
struct gb_dim { unsigned x, y, z; };
static thread_local gb_dim threadIdx;
static gb_dim blockIdx, blockDim, gridDim;
static std::barrier<>* gb_block_bar;
static std::mutex gb_atomic_mu;
alignas(16) unsigned char gb_smem[1 << 22];  // the block's dynamic shared memory

inline float __int_as_float(int i) { float f; std::memcpy(&f, &i, 4); return f; }
inline float __uint_as_float(unsigned i) { float f; std::memcpy(&f, &i, 4); return f; }
inline unsigned __float_as_uint(float f) { unsigned i; std::memcpy(&i, &f, 4); return i; }
inline int __float_as_int(float f) { int i; std::memcpy(&i, &f, 4); return i; }
inline double __longlong_as_double(long long i) { double f; std::memcpy(&f, &i, 8); return f; }
inline long long __double_as_longlong(double f) { long long i; std::memcpy(&i, &f, 8); return i; }
inline float __frcp_rn(float x) { return 1.0f / x; }
inline float __log2f(float x) { return log2f(x); }
inline unsigned atomicCAS(unsigned* a, unsigned e, unsigned d) {
  std::lock_guard<std::mutex> g(gb_atomic_mu); unsigned o = *a; if (o == e) *a = d; return o; }
inline unsigned long long atomicCAS(unsigned long long* a, unsigned long long e, unsigned long long d) {
  std::lock_guard<std::mutex> g(gb_atomic_mu); unsigned long long o = *a; if (o == e) *a = d; return o; }
template <class T> T atomicAdd(T* a, T v) { std::lock_guard<std::mutex> g(gb_atomic_mu); T o = *a; *a += v; return o; }
template <class T> T atomicMax(T* a, T v) { std::lock_guard<std::mutex> g(gb_atomic_mu); T o = *a; if (v > o) *a = v; return o; }
template <class T> T atomicMin(T* a, T v) { std::lock_guard<std::mutex> g(gb_atomic_mu); T o = *a; if (v < o) *a = v; return o; }
#include "warp.h"
inline void __syncthreads() { gb_block_bar->arrive_and_wait(); }
inline void __threadfence() {}

// f() run by every thread of every block of a (gx, gy, gz) grid of `block`-thread blocks
// (a multiple of 32), the blocks one after another; shared memory cleared to garbage first.
template <class F> void gb_launch3(unsigned gx, unsigned gy, unsigned gz, unsigned block, F f) {
  gridDim.x = gx; gridDim.y = gy; gridDim.z = gz; blockDim.x = block; blockDim.y = 1; blockDim.z = 1;
  for (unsigned bz = 0; bz < gz; ++bz)
    for (unsigned by = 0; by < gy; ++by)
      for (unsigned bx = 0; bx < gx; ++bx) {
        blockIdx.x = bx; blockIdx.y = by; blockIdx.z = bz;
        std::memset(gb_smem, 0xA5, sizeof(gb_smem));  // a GPU's shared memory is not cleared
        std::barrier<> bb(block); gb_block_bar = &bb;
        for (unsigned w = 0; w < block / 32; ++w) gb_warp_bar[w] = new std::barrier<>(32);
        std::vector<std::thread> ts;
        for (unsigned t = 0; t < block; ++t)
          ts.emplace_back([t, &f] { threadIdx.x = t; threadIdx.y = 0; threadIdx.z = 0; f(); });
        for (auto& t : ts) t.join();
        for (unsigned w = 0; w < block / 32; ++w) delete gb_warp_bar[w];
      }
}
template <class F> void gb_launch2(unsigned gx, unsigned gy, unsigned block, F f) {
  gb_launch3(gx, gy, 1, block, f);
}
