#!/usr/bin/env bash
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
bash .scratch/install.sh > /tmp/install.log 2>&1 || { tail -20 /tmp/install.log; exit 1; }
export PYTHONUNBUFFERED=1 GBDIST_CACHE_DIR=/tmp/gbc PYTHONPATH="$PWD:/tmp/site"
nvidia-smi --query-gpu=name --format=csv,noheader
s=$(date +%s)
OUT=/tmp timeout 150 python3 benchmarks/strategy_profile.py tabula_muris cosine,manhattan,canberra,hellinger,jensenshannon,chebyshev > "$OUT/tabula-profile.log" 2>&1; cp /tmp/prof_max.json "$OUT/tabula-profile.json"
echo "== tabula profile $(( $(date +%s) - s ))s"; grep -E "^\{" "$OUT/tabula-profile.log" | cut -c1-400
s=$(date +%s)
timeout 120 python3 benchmarks/results/2026-11-28-knn_kernels.py tabula_muris > "$OUT/knn-kernels.log" 2>&1
echo "== knn kernels rc=$? $(( $(date +%s) - s ))s"; cut -c1-900 "$OUT/knn-kernels.log"
s=$(date +%s)
timeout 200 python3 benchmarks/results/2026-11-28-dask_floor.py > "$OUT/dask-floor.log" 2>&1
echo "== floor rc=$? $(( $(date +%s) - s ))s"; grep -v "^{" "$OUT/dask-floor.log" | tail -8; tail -1 "$OUT/dask-floor.log" | cut -c1-500
