"""Issue 26: the accuracy rule on device operands, γ of the terms a pair adds: its decision
and cost on issue 29's four shapes (rule on + DIRECT_UNION on, against rule off), answers
compared; a cProfile of the rule's share on tall jensenshannon."""
import cProfile, pstats, io, sys, time, json, logging, statistics, warnings, os
import numpy as np, cupy, cupyx.scipy.sparse as cps
import gbdist as gb
from gbdist.runtime import accuracy
from gbdist.backends.cuda import codegen
from benchmarks import datasets
from benchmarks.knn import _normalise_rows
why = []
class H(logging.Handler):
    def emit(self, rec):
        why.append(rec.getMessage())
lg = logging.getLogger("gbdist.accuracy"); lg.setLevel(logging.DEBUG); lg.addHandler(H())
sync = cupy.cuda.runtime.deviceSynchronize
def t(fn, r):
    fn(); sync(); out = []
    for _ in range(r):
        a = time.perf_counter(); fn(); sync(); out.append((time.perf_counter() - a) * 1e3)
    return statistics.median(out)
shapes = sys.argv[1].split(",")
metrics = ["cosine", "manhattan", "canberra", "hellinger", "jensenshannon"]
rows = []
for shape in shapes:
    X = datasets.paper_shape(shape)
    Xn = _normalise_rows(X); Xn.sort_indices()
    for m in metrics:
        G = cps.csr_matrix(Xn if m in ("hellinger", "jensenshannon") else X)
        r = 3 if shape == "tall" else 2
        accuracy.DEVICE_RULE = False; codegen.DIRECT_UNION = False
        off = t(lambda: gb.knn(G, k=10, metric=m, backend="cuda"), r)
        a = gb.knn(G, k=10, metric=m, backend="cuda")
        accuracy.DEVICE_RULE = True; codegen.DIRECT_UNION = True
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            why.clear()
            b = gb.knn(G, k=10, metric=m, backend="cuda")
            decided = why[0] if why else "(no decision logged)"
            on = t(lambda: gb.knn(G, k=10, metric=m, backend="cuda"), r)
        same_i = float((a[1] == b[1]).mean())
        dd = float(abs(a[0].astype(cupy.float64) - b[0].astype(cupy.float64)).max())
        row = dict(shape=shape, metric=m, off_ms=off, on_ms=on, ratio=on / off, same_idx=same_i,
                   max_dd=dd, warnings=len(w), decision=decided)
        rows.append(row)
        print(f"{shape:5s} {m:14s} off {off:8.1f} ms  on {on:8.1f} ms  x{on/off:.2f}  same idx {same_i:.4f} max|dd| {dd:.1e}  warn {len(w)}  | {decided}", flush=True)
        del a, b, G
        cupy.get_default_memory_pool().free_all_blocks()
    if shape == "tall":
        G = cps.csr_matrix(Xn)
        accuracy.DEVICE_RULE = True
        gb.knn(G, k=10, metric="jensenshannon", backend="cuda"); sync()
        pr = cProfile.Profile(); pr.enable()
        for _ in range(3):
            gb.knn(G, k=10, metric="jensenshannon", backend="cuda"); sync()
        pr.disable()
        s = io.StringIO(); pstats.Stats(pr, stream=s).sort_stats("cumulative").print_stats(28)
        print(s.getvalue()[-6000:], flush=True)
        del G
    accuracy.DEVICE_RULE = False; codegen.DIRECT_UNION = False
out = os.environ.get("OUT", "/tmp")
json.dump(rows, open(f"{out}/acc26d-{'-'.join(shapes)}.json", "w"), indent=1)
