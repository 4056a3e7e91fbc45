#!/usr/bin/env bash
# Issue 30, one GPU call: the graph GPU tests, then benchmarks/graph_gpu.py's comparison with
# cuSPARSE on this tree ("after") and on a base commit ("before", default 4845ed5, the tree
# before issue 30), both on the same card; JSON and logs under $OUT, a short table last.
#   BASE=4845ed5 VERTS=1e4,1e5,1e6,1e7 REPS=30 bash benchmarks/graph_gpu_check.sh
# (run it after gpu_check.sh's wheel installs, or with PYTHONPATH holding the peers)
set -uo pipefail
OUT=${OUT:-/tmp/gbdist-out}
mkdir -p "$OUT" /tmp/gbdist-base
export PYTHONPATH="$PWD:${PYTHONPATH:-}"
if [ "${SKIP_TESTS:-0}" != "1" ]; then
  timeout "${TEST_S:-300}" python3 -m pytest -q -x -p no:cacheprovider -m gpu tests/backends/test_cuda_spmv_tiles_gpu.py \
    tests/backends/test_cuda_graph.py tests/graph/ > "$OUT/graph_gpu_tests.log" 2>&1
  echo "tests exit $?"; tail -3 "$OUT/graph_gpu_tests.log"
fi
V=${VERTS:-1e4,1e5,1e6,1e7}
timeout "${BENCH_S:-200}" python3 benchmarks/graph_gpu.py --vertices "$V" --reps "${REPS:-30}" --json "$OUT/after.json" > "$OUT/after.log" 2>&1
echo "after exit $?"
if [ -n "${BASE_TREE:-}" ]; then  # a tree exported beforehand (the device's copy has no .git)
  cp -r "$BASE_TREE"/. /tmp/gbdist-base
else
  git archive "${BASE:-4845ed5}" gbdist kernels grammar pyproject.toml | tar -x -C /tmp/gbdist-base
fi
PYTHONPATH="/tmp/gbdist-base:${PYTHONPATH#$PWD:}" timeout "${BENCH_S:-200}" python3 benchmarks/graph_gpu.py \
  --vertices "$V" --reps "${REPS:-30}" --json "$OUT/before.json" > "$OUT/before.log" 2>&1
echo "before exit $?"
python3 - "$OUT" <<'PY'
import json, os, sys
def load(name):
    try:
        return {r["n"]: r for r in json.load(open(os.path.join(sys.argv[1], name)))["rows"]}
    except (OSError, ValueError, KeyError):
        return {}
after, before = load("after.json"), load("before.json")
def cell(d, op, k):
    v, c = d.get(f"{op}_{k}_ms"), d.get(f"{op}_cusparse_ms")
    return f"{v:.3f} ({v / c:.2f}x)" if v and c else "-"
print("| vertices | entries | SpMV cuSPARSE | before | after | min_plus | plus_pair | user monoid | gr.mxv before | gr.mxv after | SpGEMM cuSPARSE | before | after |")
for n in sorted(set(after) | set(before)):
    a, b = after.get(n, {}), before.get(n, {})
    print(f"| {n:.0e} | {a.get('edges', b.get('edges'))} | {a.get('spmv_cusparse_ms', 0):.3f} | {cell(b, 'spmv', 'default')} | "
          f"{cell(a, 'spmv', 'default')} | {cell(a, 'spmv', 'min_plus')} | {cell(a, 'spmv', 'plus_pair')} | "
          f"{cell(a, 'spmv', 'probor')} | {cell(b, 'spmv', 'front_mxv')} | {cell(a, 'spmv', 'front_mxv')} | "
          f"{a.get('spgemm_cusparse_ms', 0):.3f} | {cell(b, 'spgemm', 'plus_times')} | {cell(a, 'spgemm', 'plus_times')} |")
PY
