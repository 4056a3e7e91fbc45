#include "threads.h"
#include "graph_algorithms.cuh"
// mode "tri": stdin n nnz mode G (lanes a row: 4, 16 or 32), Ap, Aj -> counts (3n), counts under the index order only (3n),
// then Lj and the entries' positions in A of `mode` (after a host scan), then the triangle count,
// then gb_tri_sums' eight sums (2 blocks: grid-stride and atomics)
// mode "rank": stdin n alpha teleport t nblocks, y, x, inv_s, dangling, lost -> xnew, w, err, lost'
int main(int argc, char** argv) {
  if (std::string(argv[1]) == "tri") {
    long long n, nnz; int mode, G;
    scanf("%lld %lld %d %d", &n, &nnz, &mode, &G);
    std::vector<int> Ap(n + 1), Aj(nnz);
    for (auto& v : Ap) scanf("%d", &v);
    for (auto& v : Aj) scanf("%d", &v);
    std::vector<int> deg(n), count(3 * n), only(3 * n);  // int degrees and counts (D = int)
    std::vector<int> Lp(n + 1);  // int row pointers (Q = int)
    for (long long v = 0; v < n; ++v) deg[v] = Ap[v + 1] - Ap[v];
    const unsigned grid = (unsigned)((G * n + 255) / 256), grid32 = (unsigned)((32 * n + 255) / 256);
    auto count_k = [&](int modes, int* out) {  // G lanes a row: 4 or 32
      if (G == 4) gb_launch(grid, 256, [&] { gb_tri_count<int, int, int, 4>(Ap.data(), Aj.data(), deg.data(), n, modes, out); });
      else if (G == 16) gb_launch(grid, 256, [&] { gb_tri_count<int, int, int, 16>(Ap.data(), Aj.data(), deg.data(), n, modes, out); });
      else gb_launch(grid, 256, [&] { gb_tri_count<int, int, int, 32>(Ap.data(), Aj.data(), deg.data(), n, modes, out); });
    };
    count_k(3, count.data());
    count_k(1, only.data());
    for (long long v = 0; v < n; ++v) Lp[v + 1] = Lp[v] + count[mode * n + v];
    std::vector<int> Lj(Lp[n] + 1);
    std::vector<long long> pos(Lp[n] + 1);
    if (G == 4) gb_launch(grid, 256, [&] { gb_tri_fill<int, int, int, int, 4>(Ap.data(), Aj.data(), deg.data(), n, mode, Lp.data(), Lj.data(), pos.data()); });
    else if (G == 16) gb_launch(grid, 256, [&] { gb_tri_fill<int, int, int, int, 16>(Ap.data(), Aj.data(), deg.data(), n, mode, Lp.data(), Lj.data(), pos.data()); });
    else gb_launch(grid, 256, [&] { gb_tri_fill<int, int, int, int, 32>(Ap.data(), Aj.data(), deg.data(), n, mode, Lp.data(), Lj.data(), pos.data()); });
    std::vector<unsigned long long> sums(8, 0);
    gb_launch(2, 256, [&] { gb_tri_sums<int>(deg.data(), count.data(), n, sums.data()); });
    for (auto c : count) printf("%d ", c);
    printf("\n");
    for (auto c : only) printf("%d ", c);
    printf("\n");
    for (long long p = 0; p < Lp[n]; ++p) printf("%d ", Lj[p]);
    printf("\n");
    for (long long p = 0; p < Lp[n]; ++p) printf("%lld ", pos[p]);
    printf("\n");
    unsigned long long total = 0;
    gb_launch(grid32, 256, [&] { gb_tri_intersect<int>(Lp.data(), Lj.data(), n, &total); });
    printf("%llu\n", total);
    for (auto v : sums) printf("%llu ", v);
    printf("\n");
  } else {
    long long n, t; double alpha, tele; unsigned nb;
    scanf("%lld %lf %lf %lld %u", &n, &alpha, &tele, &t, &nb);
    std::vector<double> y(n), x(n), inv(n), xn(n), w(n), scal(2 * t + 3, 0.0), part(2 * nb);
    std::vector<unsigned char> dang(n);
    for (auto& v : y) scanf("%lf", &v);
    for (auto& v : x) scanf("%lf", &v);
    for (auto& v : inv) scanf("%lf", &v);
    for (auto& v : dang) { int q; scanf("%d", &q); v = (unsigned char)q; }
    scanf("%lf", &scal[2 * t]);
    unsigned done = 0;
    gb_launch(nb, 256, [&] { gb_rank_update(y.data(), x.data(), xn.data(), inv.data(), dang.data(), w.data(),
                                            n, alpha, tele, t, scal.data(), part.data(), &done); });
    for (auto v : xn) printf("%.17g ", v);
    printf("\n");
    for (auto v : w) printf("%.17g ", v);
    printf("\n%.17g %.17g %u\n", scal[2 * t + 1], scal[2 * t + 2], done);
  }
  return 0;
}
