// The CUDA graph kernels (kernels/graph_kernels.cuh with a generated GbF) on the host: the
// harness of gather_host.h (a std::thread per CUDA thread, blocks one after another) and the
// built-ins those kernels name beyond it. Include the generated source after this header,
// with `extern __shared__` rewritten to `extern` (the block's dynamic shared memory is then
// gather_host.h's gb_smem) and __shared__ defined as `static` (one array a kernel: the
// blocks run one after another).
#pragma once
#include <type_traits>
#include "gather_host.h"
#define __host__
// the additions nvcc never contracts into a multiply-add (the host build targets no FMA)
inline double __dadd_rn(double a, double b) { return a + b; }
inline float __fadd_rn(float a, float b) { return a + b; }
inline double __dsub_rn(double a, double b) { return a - b; }
inline float __fsub_rn(float a, float b) { return a - b; }
inline int atomicCAS(int* a, int e, int d) {
  std::lock_guard<std::mutex> g(gb_atomic_mu); int o = *a; if (o == e) *a = d; return o; }
template <class T> T __shfl_xor_sync(unsigned m, T v, int off, int) { return __shfl_xor_sync(m, v, off); }
// lane l gets lane l - delta's value within its group of `width` lanes (its own below delta)
template <class T> T __shfl_up_sync(unsigned, T v, unsigned delta, int width = 32) {
  static_assert(sizeof(T) <= 8, "one slot per lane");
  const int w = threadIdx.x / 32, l = threadIdx.x % 32;
  std::memcpy(&gb_warp_slot[w][l], &v, sizeof(T));
  gb_warp_bar[w]->arrive_and_wait();
  T r = v;
  if (l % width >= (int)delta) std::memcpy(&r, &gb_warp_slot[w][l - delta], sizeof(T));
  gb_warp_bar[w]->arrive_and_wait();
  return r;
}
// lane `src`'s value (of this warp)
template <class T> T __shfl_sync(unsigned, T v, int src, int width = 32) {
  static_assert(sizeof(T) <= 8, "one slot per lane");
  const int w = threadIdx.x / 32, l = threadIdx.x % 32;
  std::memcpy(&gb_warp_slot[w][l], &v, sizeof(T));
  gb_warp_bar[w]->arrive_and_wait();
  T r; std::memcpy(&r, &gb_warp_slot[w][(l / width) * width + src % width], sizeof(T));
  gb_warp_bar[w]->arrive_and_wait();
  return r;
}
// the lanes of this warp whose value equals this lane's
template <class T> unsigned __match_any_sync(unsigned, T v) {
  static_assert(sizeof(T) <= 8, "one slot per lane");
  const int w = threadIdx.x / 32, l = threadIdx.x % 32;
  unsigned long long mine = 0; std::memcpy(&mine, &v, sizeof(T));
  gb_warp_slot[w][l] = mine;
  gb_warp_bar[w]->arrive_and_wait();
  unsigned r = 0;
  for (int q = 0; q < 32; ++q) r |= (gb_warp_slot[w][q] == mine ? 1u : 0u) << q;
  gb_warp_bar[w]->arrive_and_wait();
  return r;
}

// The drivers' input (tests/backends/host_build.py's number_line): an array as its length,
// then its values.
inline std::vector<long long> gb_read_ints() {
  long long n; if (scanf("%lld", &n) != 1) exit(1);
  std::vector<long long> v(n); for (auto& x : v) if (scanf("%lld", &x) != 1) exit(1); return v; }
inline std::vector<double> gb_read_reals() {
  long long n; if (scanf("%lld", &n) != 1) exit(1);
  std::vector<double> v(n); for (auto& x : v) if (scanf("%lf", &x) != 1) exit(1); return v; }
inline std::vector<int> gb_narrow(const std::vector<long long>& v) { return std::vector<int>(v.begin(), v.end()); }
template <int N> using gb_int = std::integral_constant<int, N>;
inline int __clz(int x) { return x == 0 ? 32 : __builtin_clz((unsigned)x); }
