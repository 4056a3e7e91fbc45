#!/bin/sh
# Issue 28, helper hB4: first-call peak memory on the road grid (10⁶), the protocol of
# cpu2-2026-11-27f-graph-memory.py (fresh process, MALLOC_MMAP_THRESHOLD_=131072, kernels
# loaded on a same-kind graph first, 1 thread), 3 processes a side, interleaved:
# BEFORE = a checkout of the code before this helper's commits, AFTER = this clone.
#   sh cpu2-2026-11-28-hB4-memory.sh BEFORE_DIR AFTER_DIR "mxm_masked ktruss" [peer-ops]
BEFORE=$1; AFTER=$2; OPS=$3; PEER_OPS=$4
S=benchmarks/results/cpu2-2026-11-27f-graph-memory.py
for rep in 1 2 3; do
  for op in $OPS; do
    for dir in "$BEFORE" "$AFTER"; do
      echo "# $(uptime | sed 's/.*load/load/') code=$dir"
      (cd "$dir" && MALLOC_MMAP_THRESHOLD_=131072 PYTHONPATH="$dir" python $S road 1e6 $op | tail -1)
    done
    case " $PEER_OPS " in *" $op "*)
      echo "# $(uptime | sed 's/.*load/load/') peer"
      (cd "$AFTER" && MALLOC_MMAP_THRESHOLD_=131072 PYTHONPATH="$AFTER" python $S road 1e6 $op --peer | tail -1);;
    esac
  done
done
