#!/usr/bin/env bash
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
bash .scratch/install.sh > "$OUT/install.log" 2>&1 || { tail -20 "$OUT/install.log"; exit 1; }
export PYTHONPATH="$PWD:/tmp/site" PYTHONUNBUFFERED=1 GBDIST_CACHE_DIR=/tmp/gbc0
nvidia-smi --query-gpu=name --format=csv,noheader | head -1
s=$(date +%s)
timeout 150 python3 -m pytest -q -p no:cacheprovider tests/algorithms/test_alg_gpu_kernels.py tests/graph/test_graph_loops_gpu.py tests/algorithms/test_alg_gpu.py > "$OUT/gpu_alg.log" 2>&1
echo "== alg tests rc=$? $(( $(date +%s) - s ))s"; grep -E "^(FAILED|ERROR)" "$OUT/gpu_alg.log" | head; tail -1 "$OUT/gpu_alg.log"
s=$(date +%s); OUT=$OUT timeout 120 python3 .scratch/pr_bench.py > "$OUT/pr.log" 2>&1; echo "== pagerank rc=$? $(( $(date +%s) - s ))s"; cat "$OUT/pr.log" | tail -3
s=$(date +%s); OUT=$OUT timeout 200 python3 .scratch/tall_prepared.py > "$OUT/tall.log" 2>&1; echo "== tall rc=$? $(( $(date +%s) - s ))s"; grep -A9 "^| metric" "$OUT/tall.log" || tail -5 "$OUT/tall.log"
