#!/usr/bin/env bash
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
bash .scratch/install.sh > "$OUT/install.log" 2>&1 || { tail -20 "$OUT/install.log"; exit 1; }
export PYTHONPATH="$PWD:/tmp/site" PYTHONUNBUFFERED=1 GBDIST_CACHE_DIR=/tmp/gbc0
nvidia-smi --query-gpu=name --format=csv,noheader | head -1
s=$(date +%s)
timeout 330 python3 benchmarks/run.py dask --shape dense --workers 1,2,4 --layouts replicated --json "$OUT/dask-dense.json" > "$OUT/dask-dense.log" 2>&1
echo "== dask dense rc=$? $(( $(date +%s) - s ))s"; grep "single-process" "$OUT/dask-dense.log"; grep -A12 "^shape  metric" "$OUT/dask-dense.log"
