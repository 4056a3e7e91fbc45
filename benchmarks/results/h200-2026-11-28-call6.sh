#!/usr/bin/env bash
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
bash .scratch/install.sh > /tmp/install.log 2>&1 || { tail -20 /tmp/install.log; exit 1; }
export PYTHONUNBUFFERED=1 GBDIST_CACHE_DIR=/tmp/gbc
nvidia-smi --query-gpu=name --format=csv,noheader
s=$(date +%s)
PYTHONPATH="$PWD:/tmp/site" timeout 150 python3 -m pytest -q -p no:cacheprovider tests/runtime/test_accuracy_rule_device_gpu.py tests/runtime/test_accuracy_device_path.py > "$OUT/gpu_accuracy.log" 2>&1
echo "== accuracy tests rc=$? $(( $(date +%s) - s ))s"; grep -E "^(FAILED|ERROR)" "$OUT/gpu_accuracy.log" | head; tail -1 "$OUT/gpu_accuracy.log"
for t in "$PWD/.scratch/base base" "$PWD new" "$PWD/.scratch/base base2" "$PWD new2"; do
  set -- $t; s=$(date +%s)
  PYTHONPATH="$1:$PWD:/tmp/site" OUT=/tmp timeout 90 python3 benchmarks/results/2026-11-28-knn_kernels.py tabula_muris > /tmp/kk.log 2>&1
  echo "== knn kernels $2 rc=$? $(( $(date +%s) - s ))s"; sed "s/^/$2 /" /tmp/kk.log >> "$OUT/knn-kernels-tabula.log"
  python3 -c "
import json
for l in open('/tmp/kk.log'):
    if l.startswith('{'):
        r=json.loads(l); print('  %-14s wall %.2f busy %.2f launches %d %s'%(r['metric'],r['wall_ms'],r['busy_ms'],r['launches'],r['strategy']))
"
done
s=$(date +%s)
PYTHONPATH="$PWD:/tmp/site" timeout $(( 590 - SECONDS )) python3 benchmarks/run.py knn --data-dir .bench_data --metrics cosine,manhattan,canberra,hellinger,jensenshannon,chebyshev --sklearn-rows 0 --peer-rows 2048 --repeats 7 --json "$OUT/knn-real.json" > "$OUT/knn-real.log" 2>&1
echo "== knn real rc=$? $(( $(date +%s) - s ))s"; sed -n '/^| data set/,$p' "$OUT/knn-real.log"
