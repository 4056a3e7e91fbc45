#!/bin/bash
# Helper hD5 (issue 28): R-MAT scale 20's masked rows on this 2-core machine.
#   bash benchmarks/results/cpu2-2026-11-27j-hD5-run.sh time T TAG OPS...  (first calls, one process an op)
#   bash benchmarks/results/cpu2-2026-11-27j-hD5-run.sh mem TAG OPS...     (first-call peak, fresh process a side)
# TREE: the source tree the scripts run from (default: this one; the code before the change was a
# `git archive` of 451751f); SIDES=gbdist: gbdist's call alone. Time: cpu2-2026-11-27j-hD5-pairs.py with
# PAIRS = 0 (gbdist's first call, the peer's first call, the runner's check). Memory:
# cpu2-2026-11-27i-hG2-graph-memory.py, MALLOC_MMAP_THRESHOLD_=131072, 1 thread.
# Each process under `timeout` (LIMIT seconds, default 1500); load average before and after.
OUTD=$PWD/benchmarks/results; P=$OUTD/cpu2-2026-11-27j-hD5
TREE=${TREE:-$PWD}; R=$TREE/benchmarks/results
export PYTHONPATH=$TREE GBDIST_CACHE_DIR=${GBDIST_CACHE_DIR:-/tmp/gbc-hD5} GRAPH_DIR=${GRAPH_DIR:-/tmp/hD5-graphs}
LIMIT=${LIMIT:-1500}
mode=$1; shift
log() { echo "$(date -u +%H:%M:%S) $* load $(cut -d' ' -f1-3 /proc/loadavg)" >> $P-loads.txt; }
if [ "$mode" = time ]; then
  T=$1; TAG=$2; shift 2
  for op in "$@"; do
    log "time start $TAG $op T=$T SIDES=${SIDES:-both}"
    timeout $LIMIT python $R/cpu2-2026-11-27j-hD5-pairs.py rmat 20 $op $T 0 | sed "s/^{/{\"tag\": \"$TAG\", /" >> $P-pairs.jsonl 2>> $P-pairs.err
    log "time end $TAG $op T=$T rc=${PIPESTATUS[0]}"
  done
else
  TAG=$1; shift
  for op in "$@"; do
    sides=("" "--peer"); [ "$SIDES" = gbdist ] && sides=("")
    for side in "${sides[@]}"; do
      log "mem start $TAG $op $side"
      MALLOC_MMAP_THRESHOLD_=131072 timeout $LIMIT python $R/cpu2-2026-11-27i-hG2-graph-memory.py rmat 20 $op $side | sed "s/^{/{\"tag\": \"$TAG\", /" >> $P-memory.jsonl 2>> $P-memory.err
      log "mem end $TAG $op $side rc=${PIPESTATUS[0]}"
    done
  done
fi
