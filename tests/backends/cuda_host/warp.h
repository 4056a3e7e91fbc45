// Warp shuffles, votes and barriers of the host harnesses (threads.h, gather_host.h): a std::thread per lane,
// each lane's value through its slot of a per-warp array and a per-warp barrier. Include
// after threadIdx is declared.
#pragma once
#include <barrier>
#include <cstring>
static std::barrier<>* gb_warp_bar[32];
static unsigned long long gb_warp_slot[32][32];
template <class T> T __shfl_xor_sync(unsigned, T v, int off) {
  static_assert(sizeof(T) <= 8, "one slot per lane");
  const int w = threadIdx.x / 32, l = threadIdx.x % 32;
  std::memcpy(&gb_warp_slot[w][l], &v, sizeof(T));
  gb_warp_bar[w]->arrive_and_wait();
  T r; std::memcpy(&r, &gb_warp_slot[w][l ^ off], sizeof(T));
  gb_warp_bar[w]->arrive_and_wait();
  return r;
}
inline unsigned __ballot_sync(unsigned, bool p) {
  const int w = threadIdx.x / 32, l = threadIdx.x % 32;
  gb_warp_slot[w][l] = p;
  gb_warp_bar[w]->arrive_and_wait();
  unsigned r = 0;
  for (int q = 0; q < 32; ++q) r |= (gb_warp_slot[w][q] ? 1u : 0u) << q;
  gb_warp_bar[w]->arrive_and_wait();
  return r;
}
inline int __popc(unsigned v) { return __builtin_popcount(v); }
inline void __syncwarp(unsigned = 0xffffffffu) { gb_warp_bar[threadIdx.x / 32]->arrive_and_wait(); }
