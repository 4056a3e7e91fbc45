#!/usr/bin/env bash
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
bash .scratch/install.sh > "$OUT/install.log" 2>&1 || { tail -20 "$OUT/install.log"; exit 1; }
export PYTHONPATH="$PWD:/tmp/site" PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
for job in "ml 0 145" "ml 1 145" "dense 0 125" "dense 1 125"; do
  set -- $job
  s=$(date +%s)
  GBDIST_DASK_IPC_REUSE=$2 timeout $3 python3 benchmarks/run.py dask --shape $1 --workers 4 --layouts replicated \
    --json "$OUT/dask-$1-w4-reuse$2.json" > "$OUT/dask-$1-w4-reuse$2.log" 2>&1
  echo "== dask $1 w4 reuse=$2 rc=$? $(( $(date +%s) - s ))s"; grep "^|" "$OUT/dask-$1-w4-reuse$2.log" | tail -8
done
