#!/usr/bin/env bash
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
bash .scratch/install.sh > "$OUT/install.log" 2>&1 || { tail -20 "$OUT/install.log"; exit 1; }
export PYTHONPATH="$PWD:/tmp/site" PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name --format=csv,noheader | head -1
s=$(date +%s)
CUDA_VISIBLE_DEVICES=0 GBDIST_CACHE_DIR=/tmp/gbc0 timeout 230 python3 -m pytest -q -p no:cacheprovider tests/neighbors/test_pruning_gpu.py tests/backends/test_pruned_values.py > "$OUT/gpu_pruned.log" 2>&1 &
CUDA_VISIBLE_DEVICES=1,2 GBDIST_CACHE_DIR=/tmp/gbc1 timeout 230 python3 -m pytest -q -p no:cacheprovider tests/dask/test_dask_gpu.py > "$OUT/gpu_dask.log" 2>&1 &
CUDA_VISIBLE_DEVICES=3 GBDIST_CACHE_DIR=/tmp/gbc3 timeout 120 python3 .scratch/pr_trace.py > "$OUT/pr_trace.log" 2>&1 &
wait
echo "== phase 1 $(( $(date +%s) - s ))s"
for f in gpu_pruned gpu_dask; do echo "== $f"; grep -E "^(FAILED|ERROR)" "$OUT/$f.log" | head -20; tail -1 "$OUT/$f.log"; done
echo "== pr_trace"; grep -E "wall ms|device busy" "$OUT/pr_trace.log"
for job in "ml 1,2,4 200" "dense 4 75"; do
  set -- $job
  s=$(date +%s)
  GBDIST_CACHE_DIR=/tmp/gbc0 timeout $3 python3 benchmarks/run.py dask --shape $1 --workers $2 --layouts replicated \
    --json "$OUT/dask-$1.json" > "$OUT/dask-$1.log" 2>&1
  echo "== dask $1 w$2 rc=$? $(( $(date +%s) - s ))s"; grep "single-process" "$OUT/dask-$1.log"; grep -A12 "^shape  metric" "$OUT/dask-$1.log"
done
