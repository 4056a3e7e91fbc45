#!/usr/bin/env bash
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
bash .scratch/install.sh > /tmp/install.log 2>&1 || { tail -20 /tmp/install.log; exit 1; }
export PYTHONUNBUFFERED=1 GBDIST_CACHE_DIR=/tmp/gbc PYTHONPATH="$PWD:/tmp/site"
nvidia-smi --query-gpu=name --format=csv,noheader
s=$(date +%s)
timeout 200 python3 benchmarks/results/2026-11-28-knn_host.py tabula_muris > "$OUT/knn-host.log" 2>&1
echo "== knn host rc=$? $(( $(date +%s) - s ))s"; grep -A28 "########" "$OUT/knn-host.log" | cut -c1-160
