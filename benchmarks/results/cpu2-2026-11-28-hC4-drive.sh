#!/bin/bash
# helper hC4's measurement driver: every run sequential, uptime logged before and after
cd /work/hC4
. /tmp/venv/bin/activate
export PYTHONPATH=$PWD GBDIST_CACHE_DIR=/tmp/cache-hC4 GRAPH_DIR=/tmp/hC4-graphs
L=/tmp/hC4-logs
R=benchmarks/results
log() { echo "$(date -u +%H:%M:%S) $(uptime | sed 's/.*load/load/') :: $*" >> $L/loads.txt; }
log "start"
log "check jaccard t1"; python $R/cpu2-2026-11-28-hC4-check.py jaccard 1 2 >> $L/check.jsonl 2>>$L/err.txt; log "done"
for T in 2 1; do
  for OP in jaccard cosine; do
    log "pairs $OP t$T"; python $R/cpu2-2026-11-28-hC4-pairs.py power_law 1.7e7 $OP $T 1 >> $L/pairs.jsonl 2>>$L/err.txt; log "done"
  done
done
log "pairs mxm_masked t2"; python $R/cpu2-2026-11-28-hC4-pairs.py power_law 1.7e7 mxm_masked 2 1 >> $L/pairs.jsonl 2>>$L/err.txt; log "done"
log "pairs mxm_masked t1"; python $R/cpu2-2026-11-28-hC4-pairs.py power_law 1.7e7 mxm_masked 1 0 >> $L/pairs.jsonl 2>>$L/err.txt; log "done"
log "pairs ktruss t2"; timeout 900 python $R/cpu2-2026-11-28-hC4-pairs.py power_law 1.7e7 ktruss 2 0 >> $L/pairs.jsonl 2>>$L/err.txt; log "done rc=$?"
for OP in jaccard cosine; do
  for k in 1 2 3; do
    log "memory $OP gbdist $k"; MALLOC_MMAP_THRESHOLD_=131072 python $R/cpu2-2026-11-27f-graph-memory.py power_law 1.7e7 $OP >> $L/memory.jsonl 2>>$L/err.txt; log "done"
    log "memory $OP peer $k"; MALLOC_MMAP_THRESHOLD_=131072 python $R/cpu2-2026-11-27f-graph-memory.py power_law 1.7e7 $OP --peer >> $L/memory.jsonl 2>>$L/err.txt; log "done"
  done
done
log "pairs ktruss t1"; timeout 900 python $R/cpu2-2026-11-28-hC4-pairs.py power_law 1.7e7 ktruss 1 0 >> $L/pairs.jsonl 2>>$L/err.txt; log "done rc=$?"
for OP in mxm_masked ktruss; do
  for k in 1 2 3; do
    log "memory $OP gbdist $k"; MALLOC_MMAP_THRESHOLD_=131072 python $R/cpu2-2026-11-27f-graph-memory.py power_law 1.7e7 $OP >> $L/memory.jsonl 2>>$L/err.txt; log "done"
    log "memory $OP peer $k"; MALLOC_MMAP_THRESHOLD_=131072 python $R/cpu2-2026-11-27f-graph-memory.py power_law 1.7e7 $OP --peer >> $L/memory.jsonl 2>>$L/err.txt; log "done"
  done
done
log "end"
log() { echo "$(date -u +%H:%M:%S) $(uptime | sed 's/.*load/load/') :: $*" >> $L/loads.txt; }
for OP in jaccard cosine; do
  log "pairs $OP t2 (second run)"; python $R/cpu2-2026-11-28-hC4-pairs.py power_law 1.7e7 $OP 2 1 >> $L/pairs.jsonl 2>>$L/err.txt; log "done"
done
log "end2"
