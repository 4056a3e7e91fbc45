#!/usr/bin/env bash
# .scratch/base: git archive 22287be gbdist kernels grammar (the tree before the upper tiles) + pyproject.toml; .scratch/install.sh: the carried wheels (benchmarks/gpu_check.sh does the same)
# GPU 0: the GPU-marked suite in 6 groups; GPU 1: the upper-tiles A/B, dense union, ncu.
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
s0=$(date +%s)
bash .scratch/install.sh > /tmp/install.log 2>&1 || { tail -20 /tmp/install.log; exit 1; }
export PYTHONPATH="$PWD:/tmp/site" PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
NG=$(nvidia-smi -L | wc -l); SG=0; BG=$(( NG > 1 ? 1 : 0 ))
G=("tests/backends/test_cuda_backend.py"
   "$(ls tests/backends/*.py | grep -v test_cuda_backend.py | tr '\n' ' ')"
   "tests/neighbors"
   "tests/runtime tests/dask tests/algorithms tests/cli tests/compat"
   "tests/graph"
   "tests/front tests/compiler tests/algebra tests/test_graph.py tests/startup")
for i in 0 1 2 3 4 5; do
  CUDA_VISIBLE_DEVICES=$SG GBDIST_CACHE_DIR=/tmp/gbc$i timeout ${SUITE_LIMIT:-500} python3 -m pytest -q -p no:cacheprovider -m gpu ${G[$i]} > /tmp/gpu_g$i.log 2>&1 &
done
(
export CUDA_VISIBLE_DEVICES=$BG GBDIST_CACHE_DIR=/tmp/gbcb
for r in 1 2; do
  for t in ".scratch/base base$r" ". new$r"; do set -- $t
    OUT=/tmp timeout 200 python3 benchmarks/results/2026-11-28b-upper_tiles.py $1 $2 >> /tmp/ab.jsonl 2>/tmp/ab_$2.err
    echo "== ab $2 rc=$? $(( $(date +%s) - s0 ))s"; tail -2 /tmp/ab_$2.err
  done
done
OUT=/tmp python3 benchmarks/results/2026-11-28b-upper_compare.py < /tmp/ab.jsonl > /tmp/ab_table.md 2>&1; cat /tmp/ab_table.md
timeout 150 python3 benchmarks/results/2026-11-28-dense_union.py > /tmp/du.log 2>&1
echo "== dense_union rc=$? $(( $(date +%s) - s0 ))s"; sed -n '/^| data/,$p' /tmp/du.log; grep -E "Error" /tmp/du.log | tail -3
for m in jensenshannon chebyshev; do
  timeout 100 ncu --clock-control none --target-processes all \
    --kernel-name regex:'gb_scatter|gb_gather|gb_mirror|gb_union' --launch-skip 3 --launch-count 3 \
    --section SpeedOfLight --section Occupancy --section LaunchStats --section MemoryWorkloadAnalysis \
    --section ComputeWorkloadAnalysis --section WarpStateStats --section SchedulerStats \
    python3 benchmarks/results/2026-11-28b-ncu_tabula.py $m > /tmp/ncu_$m.txt 2>&1
  echo "== ncu $m rc=$? $(( $(date +%s) - s0 ))s"; grep -E "^  [a-zA-Z_]|Duration|Compute \(SM\) Throughput|Memory Throughput  |Achieved Occupancy|Issued Ipc|^strategy" /tmp/ncu_$m.txt | cut -c1-150 | head -30
done
) > /tmp/bench.txt 2>&1 &
BP=$!
wait
cat /tmp/bench.txt
for i in 0 1 2 3 4 5; do echo "== group $i"; grep -E "^(FAILED|ERROR)" /tmp/gpu_g$i.log | head -20; tail -1 /tmp/gpu_g$i.log; done
cat /tmp/gpu_g*.log > "$OUT/gpu_suite.log"; cat /tmp/ab.jsonl /tmp/ab_table.md /tmp/ab_*.err > "$OUT/ab.log" 2>/dev/null
cp /tmp/knn-base1.npz /tmp/knn-new1.npz "$OUT/" 2>/dev/null; cat /tmp/du.log /tmp/dense-union.json > "$OUT/dense_union.log" 2>/dev/null
cat /tmp/ncu_*.txt > "$OUT/ncu.txt" 2>/dev/null
echo "== total $(( $(date +%s) - s0 ))s"
