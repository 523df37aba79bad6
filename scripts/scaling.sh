#!/usr/bin/env bash
# scaling.sh — training tokens/s of the small config on Multi30k with 1 and 2 MPI processes × 1 and 2 threads
# each (the scaling table of docs/mpi.md). The global batch stays data.batch (64) in every case.
#
#   MULTI30K=data/multi30k scripts/scaling.sh           # 3 runs of 100 measured steps after 20 warm-up steps
#   RUNS=5 STEPS=200 MULTI30K=data/multi30k scripts/scaling.sh
#
# MULTI30K is the Multi30k directory (scripts/get-multi30k.sh DIR fetches it).
# Needs Open MPI (apt-get install libopenmpi-dev openmpi-bin). Runs on the OpenBLAS kernels attend picks.
set -euo pipefail
. "$(dirname "$0")/need.sh"
need_multi30k train.de train.en
cd "$(dirname "$0")/.."
RUNS=${RUNS:-3}
STEPS=${STEPS:-100}
WARM=${WARM:-20}
DATA=$MULTI30K
make -s build-mpi
ATTEND=bin/attend-mpi
. scripts/openblas-core.sh   # the OpenBLAS kernels of this CPU for every run below (uses ATTEND)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
total=$((STEPS + WARM))
for i in $(seq "$RUNS"); do
  for ranks in 1 2; do
    for threads in 1 2; do
      echo "run $i/$RUNS: $ranks process(es) × $threads thread(s)" >&2
      env OPENBLAS_NUM_THREADS="$threads" mpirun --allow-run-as-root --oversubscribe \
        --bind-to none -np "$ranks" bin/attend-mpi train --config configs/small.yaml --src "$DATA/train.de" \
        --tgt "$DATA/train.en" --out "$out/r${ranks}t${threads}-$i.ckpt" --max-steps "$total" --threads "$threads" \
        --set train.log_every="$WARM" --set train.save_every=0 --no-progress >/dev/null
    done
  done
done
/usr/bin/python3 - "$out" "$RUNS" "$WARM" <<'PY'
import json, statistics, sys
out, runs, warm = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
def toks(path):
    recs = [json.loads(l) for l in open(path) if '"step"' in l]
    timed = [r for r in recs if r["step"] > warm]          # windows after the warm-up (graph compiles)
    return sum(r["tgt_tokens"] for r in timed) / sum(r["tgt_tokens"] / r["tok_per_s"] for r in timed)
base = None
print("| processes × threads | train tgt tok/s (median of %d) | vs 1 × 1 |" % runs)
print("|---|---|---|")
for ranks in (1, 2):
    for threads in (1, 2):
        m = statistics.median(toks(f"{out}/r{ranks}t{threads}-{i}.metrics.jsonl") for i in range(1, runs + 1))
        base = base or m
        print(f"| {ranks} × {threads} | {m:,.0f} | {m / base:.2f}× |")
PY
