#!/usr/bin/env bash
# One call on the GPU machine: install carried wheels, run the GPU tests (-m gpu), run one
# section of the benchmark runner (default: distances), print its short table last. Full
# logs and JSON go under $OUT.
#   BENCH_ARGS="--datasets movielens,kos" bash benchmarks/gpu_check.sh
#   SKIP_TESTS=1 BENCH_SECTION=latency bash benchmarks/gpu_check.sh
#   FIRST_CALL=1 ...   also the fresh-process start-up on the GPU (latency --only startup)
set -uo pipefail
OUT=${OUT:-/tmp/gbdist-out}
mkdir -p "$OUT"
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl || exit 1
fi
for extra in .whl/dask .whl_dcuda/dcuda .whl_graph; do  # Dask, dask-cuda, python-graphblas (peers)
  if ls $extra/*.whl >/dev/null 2>&1; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site $extra/*.whl
  fi
done
export PYTHONPATH="$PWD:${PYTHONPATH:-}:/tmp/site"
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
python3 -c "import cupy, numpy, scipy, sympy; print('cupy', cupy.__version__, 'numpy', numpy.__version__, 'scipy', scipy.__version__, 'sympy', sympy.__version__)"
if [ "${SKIP_TESTS:-0}" != "1" ]; then
  python3 -m pytest -q -p no:cacheprovider -m gpu tests ${TEST_ARGS:-} 2>&1 | tee "$OUT/gpu_tests.log" | tail -25
fi
if [ "${FIRST_CALL:-0}" = "1" ]; then  # fresh processes, empty and warm caches, on the GPU
  python3 benchmarks/run.py latency --only startup --device cuda --json "$OUT/first_call.json" \
    > "$OUT/first_call.log" 2>&1
  echo "-- start-up on the GPU (full log: $OUT/first_call.log)"; sed -n '/^| part/,$p' "$OUT/first_call.log"
fi
if [ "${SKIP_BENCH:-0}" != "1" ]; then
  SECTION=${BENCH_SECTION:-distances}
  DATA=""
  case "$SECTION" in distances|knn) DATA="--data-dir .bench_data" ;; esac
  python3 benchmarks/run.py "$SECTION" $DATA ${BENCH_ARGS:-} --json "$OUT/bench.json" > "$OUT/bench.log" 2>&1
  status=$?
  first=$(grep -n '^| ' "$OUT/bench.log" | head -1 | cut -d: -f1)  # its table, printed last
  if [ -n "$first" ]; then tail -n +"$first" "$OUT/bench.log"; else tail -n 40 "$OUT/bench.log"; fi
  echo "(full log: $OUT/bench.log, results: $OUT/bench.json, exit $status)"
  exit $status
fi
