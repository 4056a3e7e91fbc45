#!/usr/bin/env bash
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
bash .scratch/install.sh > /tmp/install.log 2>&1 || { tail -20 /tmp/install.log; exit 1; }
export PYTHONUNBUFFERED=1 GBDIST_CACHE_DIR=/tmp/gbc
nvidia-smi --query-gpu=name --format=csv,noheader
s=$(date +%s)
PYTHONPATH="$PWD:/tmp/site" timeout 100 python3 benchmarks/results/2026-11-28-dask_floor.py > "$OUT/dask-floor.log" 2>&1
echo "== floor rc=$? $(( $(date +%s) - s ))s"; grep -v "^{" "$OUT/dask-floor.log" | grep -E "gb.knn|W=|Error" | tail -8
for t in "$PWD t16" "$PWD/.scratch/t8 t8"; do
  set -- $t; s=$(date +%s)
  PYTHONPATH="$1:$PWD:/tmp/site" timeout 170 python3 benchmarks/run.py dask --shape ml --workers 4 --layouts replicated --json "$OUT/dask-ml-$2.json" > "$OUT/dask-ml-$2.log" 2>&1
  echo "== dask ml w4 $2 rc=$? $(( $(date +%s) - s ))s"; PYTHONPATH="$1:$PWD:/tmp/site" python3 -c "import gbdist.neighbors.shares as s; print(\"TILES_PER_SHARE\", s.TILES_PER_SHARE, s.__file__)"; grep "single-process" "$OUT/dask-ml-$2.log"; grep -A8 "^shape  metric" "$OUT/dask-ml-$2.log"
done
