#!/bin/sh
# The power law's unmasked mxm, one library per process (cpu2-2026-11-27k-hE1-mxm.py),
# sides alternated (gbdist, peer, gbdist, peer, ...) at each thread count; load average
# before and after every process to RUNS.
#   sh cpu2-2026-11-27k-hE1-mxm.sh TREE LABEL OUT.jsonl RUNS.txt "1 2" "gbdist peer" PROCS [EDGES]
TREE=$1 LABEL=$2 OUT=$3 RUNS=$4 THREADS=$5 SIDES=$6 PROCS=$7 EDGES=${8:-1.7e6}
for t in $THREADS; do
  for k in $(seq "$PROCS"); do
    for s in $SIDES; do
      echo "$LABEL $s T=$t #$k start $(date -u +%H:%M:%S) load $(cat /proc/loadavg)" >> "$RUNS"
      line=$(cd "$TREE" && PYTHONPATH="$TREE" timeout 900 prlimit --as=9000000000 \
        python benchmarks/results/cpu2-2026-11-27k-hE1-mxm.py "$s" "$t" --edges "$EDGES" --repeat 3); rc=$?
      echo "{\"label\": \"$LABEL\", ${line#\{}" >> "$OUT"
      echo "$LABEL $s T=$t #$k end   $(date -u +%H:%M:%S) load $(cat /proc/loadavg) rc=$rc" >> "$RUNS"
    done
  done
done
