#!/usr/bin/env bash
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
bash .scratch/install.sh > /tmp/install.log 2>&1 || { tail -20 /tmp/install.log; exit 1; }
export PYTHONUNBUFFERED=1 GBDIST_CACHE_DIR=/tmp/gbc PYTHONPATH="$PWD:/tmp/site" GBDIST_TILES_PER_SHARE=8
python3 -c "import gbdist.neighbors.shares as s; print('TILES_PER_SHARE', s.TILES_PER_SHARE)"
s=$(date +%s)
timeout 150 python3 benchmarks/run.py dask --shape ml --workers 4 --layouts replicated --json "$OUT/dask-ml-t8.json" > "$OUT/dask-ml-t8.log" 2>&1
echo "== dask ml w4 t8 rc=$? $(( $(date +%s) - s ))s"; grep "single-process" "$OUT/dask-ml-t8.log"; grep -A8 "^shape  metric" "$OUT/dask-ml-t8.log"
