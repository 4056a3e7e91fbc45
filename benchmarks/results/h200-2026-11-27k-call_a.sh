#!/usr/bin/env bash
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
bash .scratch/install.sh > "$OUT/install.log" 2>&1 || { tail -20 "$OUT/install.log"; exit 1; }
export PYTHONPATH="$PWD:/tmp/site" PYTHONUNBUFFERED=1 GBDIST_CACHE_DIR=/tmp/gbc0
nvidia-smi --query-gpu=name --format=csv,noheader | head -1
s=$(date +%s)
timeout 170 python3 -c "
import sys, pytest
import gbdist.backends.cuda.pruned_values as P; P.FUSED_SEARCH = True
sys.exit(pytest.main(['-q', '-p', 'no:cacheprovider', 'tests/neighbors/test_pruning_gpu.py', 'tests/backends/test_pruned_values.py']))
" > "$OUT/gpu_search_tests.log" 2>&1
echo "== search tests rc=$? $(( $(date +%s) - s ))s"; grep -E "^(FAILED|ERROR)" "$OUT/gpu_search_tests.log" | head; tail -1 "$OUT/gpu_search_tests.log"
s=$(date +%s); OUT=$OUT timeout 130 python3 .scratch/search_bench.py tall cosine,jensenshannon,chebyshev,hellinger > "$OUT/search.log" 2>&1
echo "== search bench rc=$? $(( $(date +%s) - s ))s"; grep -A8 "^| shape" "$OUT/search.log" || tail -5 "$OUT/search.log"
s=$(date +%s); OUT=$OUT timeout 110 python3 .scratch/prof30.py > "$OUT/prof30.log" 2>&1
echo "== prof30 rc=$? $(( $(date +%s) - s ))s"; grep -E "^(10000|100000|pagerank) " "$OUT/prof30.log"
s=$(date +%s); OUT=$OUT timeout 120 python3 .scratch/dense_manhattan.py > "$OUT/dm.log" 2>&1
echo "== dense manhattan rc=$? $(( $(date +%s) - s ))s"; python3 -c "
import json
for l in open('$OUT/dm.log'):
    if l.startswith('{'):
        r=json.loads(l); print(r['metric'], r['direct_union'], round(r['knn_ms'],1), [round(x,1) for x in r['shares_raw']], r['choices_knn'], r['choices_shares'][:6], round(r['pool_gib'],1))
" 2>&1 || tail -5 "$OUT/dm.log"
