#!/usr/bin/env bash
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
s0=$(date +%s)
bash .scratch/install.sh > /tmp/install.log 2>&1 || { tail -20 /tmp/install.log; exit 1; }
export PYTHONPATH="$PWD:/tmp/site" PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
GBDIST_CACHE_DIR=/tmp/gbt timeout 200 python3 -m pytest -q -p no:cacheprovider tests/neighbors/test_knn_gpu.py -k "shrink_on_out_of_memory" tests/runtime/test_upper_tiles.py tests/backends/test_upper_tiles_gpu.py > /tmp/t.log 2>&1 &
export GBDIST_CACHE_DIR=/tmp/gbb
timeout 240 python3 benchmarks/run.py knn --data-dir .bench_data --metrics cosine,manhattan,canberra,hellinger,jensenshannon,chebyshev --sklearn-rows 0 --peer-rows 2048 --repeats 5 --json /tmp/knn-real.json > /tmp/knn-real.log 2>&1
echo "== knn real rc=$? $(( $(date +%s) - s0 ))s"; sed -n '/^| data set/,$p' /tmp/knn-real.log | cut -c1-400
wait; echo "== tests"; grep -E "^(FAILED|ERROR)" /tmp/t.log; tail -1 /tmp/t.log
for S in tall ml dense wide; do
  left=$(( 585 - $(date +%s) + s0 )); [ $left -lt 30 ] && break
  timeout $left python3 benchmarks/run.py pruned --shape $S --modes auto --metrics cosine,manhattan,canberra,hellinger,jensenshannon,chebyshev --repeats 2 --peer-rows 4096 --no-stages --json /tmp/pr-$S.json > /tmp/pr-$S.log 2>&1
  echo "== pruned $S rc=$? $(( $(date +%s) - s0 ))s"; grep -E "^\| " /tmp/pr-$S.log | cut -c1-300 | tail -12
done
cat /tmp/knn-real.log /tmp/pr-*.log > "$OUT/bench.log"; cat /tmp/t.log > "$OUT/tests.log"
python3 - <<'PY'
import glob, json, os
out = {}
for f in ["/tmp/knn-real.json"] + sorted(glob.glob("/tmp/pr-*.json")):
    try: out[os.path.basename(f)] = json.load(open(f))
    except Exception as e: out[os.path.basename(f)] = repr(e)
json.dump(out, open(os.environ["OUT"] + "/bench.json", "w"))
PY
echo "== total $(( $(date +%s) - s0 ))s"
