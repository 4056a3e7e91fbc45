#!/usr/bin/env bash
# two GPUs: Dask replicated search after the upper tiles and the shares' diagonal weight
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
s0=$(date +%s)
bash .scratch/install.sh > /tmp/install.log 2>&1 || { tail -20 /tmp/install.log; exit 1; }
export PYTHONUNBUFFERED=1 GBDIST_CACHE_DIR=/tmp/gbc PYTHONPATH="$PWD:/tmp/site"
nvidia-smi --query-gpu=name --format=csv,noheader
timeout 220 python3 benchmarks/run.py dask --shape dense --workers 1,2 --layouts replicated --json "$OUT/dask-dense.json" > "$OUT/dask-dense.log" 2>&1
echo "== dask dense rc=$? $(( $(date +%s) - s0 ))s"; grep "single-process" "$OUT/dask-dense.log"; grep -A8 "^shape  metric" "$OUT/dask-dense.log"
left=$(( 420 - $(date +%s) + s0 ))
timeout $left python3 benchmarks/run.py dask --shape ml --workers 2 --layouts replicated --json "$OUT/dask-ml.json" > "$OUT/dask-ml.log" 2>&1
echo "== dask ml rc=$? $(( $(date +%s) - s0 ))s"; grep "single-process" "$OUT/dask-ml.log"; grep -A8 "^shape  metric" "$OUT/dask-ml.log"
