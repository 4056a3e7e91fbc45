#include "serial.h"
#include "graph_algorithms.cuh"
// stdin: n nnz half nblocks seed, Ap (n+1), Aj (nnz), rows (n), meta (12); stdout: labels
int main() {
  long long n, nnz, nblocks, seed; int half;
  if (scanf("%lld %lld %d %lld %lld", &n, &nnz, &half, &nblocks, &seed) != 5) return 2;
  std::vector<int> Ap(n + 1), Aj(nnz), parent(n);
  std::vector<long long> rows(n), meta(12), label(n);
  for (auto& v : Ap) scanf("%d", &v);
  for (auto& v : Aj) scanf("%d", &v);
  for (auto& v : rows) scanf("%lld", &v);
  for (auto& v : meta) scanf("%lld", &v);
  blockDim.x = 256;
  gridDim.x = (unsigned)((n + 255) / 256);
  for (unsigned b = 0; b < gridDim.x; ++b) for (unsigned t = 0; t < 256; ++t) {
    blockIdx.x = b; threadIdx.x = t; gb_cc_init<int, int>(Ap.data(), Aj.data(), n, parent.data()); }
  std::vector<std::pair<unsigned, unsigned>> order;  // every (block, thread), shuffled
  for (unsigned b = 0; b < nblocks; ++b) for (unsigned t = 0; t < 256; ++t) order.push_back({b, t});
  std::mt19937_64 rng(seed);
  std::shuffle(order.begin(), order.end(), rng);
  gridDim.x = (unsigned)nblocks;
  for (auto& bt : order) {
    blockIdx.x = bt.first; threadIdx.x = bt.second;
    gb_cc_hook<int, int>(rows.data(), meta.data(), Ap.data(), Aj.data(), parent.data(), half);
  }
  gridDim.x = (unsigned)((n + 255) / 256);
  for (unsigned b = 0; b < gridDim.x; ++b) for (unsigned t = 0; t < 256; ++t) {
    blockIdx.x = b; threadIdx.x = t; gb_cc_label<int>(parent.data(), n, label.data()); }
  for (auto v : label) printf("%lld\n", v);
  return 0;
}
