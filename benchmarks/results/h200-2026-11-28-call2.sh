#!/usr/bin/env bash
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
bash .scratch/install.sh > /tmp/install.log 2>&1 || { tail -20 /tmp/install.log; exit 1; }
export PYTHONPATH="$PWD:/tmp/site" PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name --format=csv,noheader | head -1
s=$(date +%s)
GBDIST_CACHE_DIR=/tmp/gbc1 timeout 280 python3 -m pytest -q -p no:cacheprovider tests/neighbors/test_pruning_gpu.py > "$OUT/gpu_pruning_on.log" 2>&1 &
GBDIST_CACHE_DIR=/tmp/gbc2 timeout 280 python3 -c "
import sys, pytest
import gbdist.backends.cuda.pruned_plan as p; p.UNION_TOP = False
sys.exit(pytest.main(['-q', '-p', 'no:cacheprovider', 'tests/neighbors/test_pruning_gpu.py']))" > "$OUT/gpu_pruning_off.log" 2>&1 &
GBDIST_CACHE_DIR=/tmp/gbc3 timeout 280 python3 -m pytest -q -p no:cacheprovider tests/backends/test_pruned_values.py tests/backends/test_cuda_graph.py tests/graph/test_device_paths.py > "$OUT/gpu_graph.log" 2>&1 &
wait
echo "== tests $(( $(date +%s) - s ))s"
for f in gpu_pruning_on gpu_pruning_off gpu_graph; do echo "== $f"; grep -E "^(FAILED|ERROR)" "$OUT/$f.log" | head -20; tail -1 "$OUT/$f.log"; done
export GBDIST_CACHE_DIR=/tmp/gbc1
B="$OUT/bench.log"
s=$(date +%s)
OUT=/tmp timeout 60 python3 benchmarks/results/2026-11-28-union_top.py tall >> "$B" 2>&1
echo "== union_top rc=$? $(( $(date +%s) - s ))s"; grep -A4 "^| metric" "$B"
for t in ".scratch/base base" ". new" ".scratch/base base2" ". new2"; do
  set -- $t; s=$(date +%s)
  OUT=/tmp timeout 60 python3 benchmarks/results/2026-11-28-spgemm_reads.py $1 $2 > /tmp/sp.log 2>&1
  echo "== spgemm $2 rc=$? $(( $(date +%s) - s ))s"; cat /tmp/sp.log >> "$B"
  python3 -c "
import json,sys
for l in open('/tmp/sp.log'):
    if l.startswith('{'):
        r=json.loads(l); print(r['n'], 'gbdist %.3f cusparse %.3f ratio %.2f (host %.3f/%.3f)'%(r['gbdist']['gpu_ms'],r['cusparse']['gpu_ms'],r['ratio'],r['gbdist']['cpu_ms'],r['cusparse']['cpu_ms']))
" ; grep -E "Error" /tmp/sp.log | tail -3
done
s=$(date +%s)
timeout 40 python3 benchmarks/graph_symmetric_gpu.py --grids "" --fem "" --band 4000000x4,2000000x16,1000000x64 --cross "" --cross-graphs "" --json "$OUT/band.json" > /tmp/band.log 2>&1
echo "== band rc=$? $(( $(date +%s) - s ))s"; cat /tmp/band.log >> "$B"; sed -n '/^matrix size/,$p' /tmp/band.log | cut -c1-400
s=$(date +%s)
timeout $(( 590 - SECONDS )) python3 benchmarks/run.py knn --data-dir .bench_data --metrics cosine,manhattan,canberra,hellinger,jensenshannon,chebyshev --sklearn-rows 0 --peer-rows 2048 --repeats 5 --json "$OUT/knn-real.json" > "$OUT/knn-real.log" 2>&1
echo "== knn real rc=$? $(( $(date +%s) - s ))s"; sed -n '/^| data set/,$p' "$OUT/knn-real.log"
