#!/usr/bin/env bash
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
bash .scratch/install.sh > "$OUT/install.log" 2>&1 || { tail -20 "$OUT/install.log"; exit 1; }
export PYTHONPATH="$PWD:/tmp/site" PYTHONUNBUFFERED=1 GBDIST_CACHE_DIR=/tmp/gbc
nvidia-smi --query-gpu=name --format=csv,noheader | head -1
s=$(date +%s)
timeout 200 python3 -m pytest -q -p no:cacheprovider -x tests/neighbors/test_pruning_gpu.py tests/backends/test_pruned_values.py tests/backends/test_cuda_graph.py > "$OUT/gpu_tests_off.log" 2>&1
echo "== tests (UNION_TOP off) rc=$? $(( $(date +%s) - s ))s"; grep -E "^(FAILED|ERROR)" "$OUT/gpu_tests_off.log" | head; tail -1 "$OUT/gpu_tests_off.log"
s=$(date +%s)
timeout 120 python3 -c "
import sys, pytest
import gbdist.backends.cuda.pruned_plan as p; p.UNION_TOP = True
sys.exit(pytest.main(['-q', '-p', 'no:cacheprovider', 'tests/neighbors/test_pruning_gpu.py']))" > "$OUT/gpu_tests_on.log" 2>&1
echo "== pruning tests (UNION_TOP on) rc=$? $(( $(date +%s) - s ))s"; grep -E "^(FAILED|ERROR)" "$OUT/gpu_tests_on.log" | head; tail -1 "$OUT/gpu_tests_on.log"
s=$(date +%s)
timeout 100 python3 benchmarks/results/2026-11-28-union_top.py tall > "$OUT/union_top.log" 2>&1
echo "== union_top rc=$? $(( $(date +%s) - s ))s"; grep -A4 "^| metric" "$OUT/union_top.log" || tail -5 "$OUT/union_top.log"
for t in ".scratch/base base" ". new" ".scratch/base base2" ". new2"; do
  set -- $t; s=$(date +%s)
  timeout 60 python3 benchmarks/results/2026-11-28-spgemm_reads.py $1 $2 > "$OUT/spgemm-$2.log" 2>&1
  echo "== spgemm $2 rc=$? $(( $(date +%s) - s ))s"
  python3 -c "
import json,sys
for l in open('$OUT/spgemm-$2.log'):
    if l.startswith('{'):
        r=json.loads(l); print(r['n'], 'gbdist %.3f cusparse %.3f ratio %.2f (host %.3f/%.3f)'%(r['gbdist']['gpu_ms'],r['cusparse']['gpu_ms'],r['ratio'],r['gbdist']['cpu_ms'],r['cusparse']['cpu_ms']))
" ; grep -E "Error|error" "$OUT/spgemm-$2.log" | tail -3
done
