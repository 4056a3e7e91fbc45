#!/usr/bin/env bash
# One call on the GPU machine: install carried wheels, run the GPU tests (-m gpu), run the
# benchmark, print a short table last. Full logs and JSON go under $OUT.
#   BENCH_ARGS="--datasets movielens,kos" bash benchmarks/gpu_check.sh
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
if [ "${FIRST_CALL:-0}" = "1" ]; then
  cache=$(mktemp -d)
  echo "-- first call, cold kernel cache"; GBDIST_CACHE_DIR=$cache python3 benchmarks/first_call.py 2>&1 | tee "$OUT/first_call_cold.log"
  echo "-- first call, warm kernel cache (new process)"; GBDIST_CACHE_DIR=$cache python3 benchmarks/first_call.py 2>&1 | tee "$OUT/first_call_warm.log"
fi
if [ "${SKIP_BENCH:-0}" != "1" ]; then
  python3 benchmarks/run.py --data-dir .bench_data ${BENCH_ARGS:-} --json "$OUT/bench.json" 2>&1 | tee "$OUT/bench.log"
fi
