#!/usr/bin/env bash
# attention-table.sh — docs/attention.md's comparison of attention variants on Multi30k De→En: every variant trains the
# same `small` recipe for the same number of epochs, then reports validation perplexity, test_2016 BLEU (greedy,
# tokenized lowercased, as `attend eval --tok-lc` scores it), training tokens/s (the median of the logged 50-step
# windows), and a reading of its attention on
# test_2016: how sharp (mean largest weight of a row, mean entropy in nats) and how monotone (share of output
# words whose most-attended source word is not left of the previous one's).
#
# MULTI30K names the Multi30k directory (scripts/get-multi30k.sh DIR fetches it); the examples leave it out.
#
#   MULTI30K=data/multi30k scripts/attention-table.sh   # every variant, 3 epochs (about 20 min each on 2 cores)
#   EPOCHS=1 VARIANTS="additive dot" scripts/attention-table.sh
#   MAX_STEPS=20 VARIANTS=dot scripts/attention-table.sh   # a smoke run
#   ATTEND=/path/to/attend nice -n 19 scripts/attention-table.sh   # a fixed binary, on idle cores only
#   SPEED_STEPS=120 scripts/attention-table.sh       # tok/s from a separate run of 120 steps per variant
#   SPEED_FILE=bench.txt scripts/attention-table.sh  # tok/s from BenchmarkTrainStepMulti30kVariants (see below)
#   OPENBLAS_NUM_THREADS=1 EXTRA_SET=train.threads=1 VARIANTS="dot cosine" scripts/attention-table.sh &
#   OPENBLAS_NUM_THREADS=1 EXTRA_SET=train.threads=1 VARIANTS="local hard" scripts/attention-table.sh &
#                                                    # two variants at a time, one core each: about 1.2x the
#                                                    # throughput of one at a time on two cores here
#
# Runs are kept in OUT (default attention-table/): a variant whose checkpoint is complete is not trained again, so
# an interrupted table resumes. Needs python3 for the attention statistics (Debian's python3; standard library).
set -euo pipefail
. "$(dirname "$0")/need.sh"
need_multi30k train.de train.en val.de val.en test_2016_flickr.de test_2016_flickr.en
cd "$(dirname "$0")/.."
EPOCHS=${EPOCHS:-3}
MAX_STEPS=${MAX_STEPS:-0}
# SPEED_STEPS > 0 measures each variant's training speed in a run of its own, that many steps from scratch
# (logged every 20, the first window left out), instead of from the long run's windows: for a table whose long
# runs shared the machine with other work. Its runs are kept in OUT as VARIANT.speed.*.
SPEED_STEPS=${SPEED_STEPS:-0}
# SPEED_FILE names the output of
#   (ATTEND=bin/attend; . scripts/openblas-core.sh; go test -tags openblas ./model -run '^$' -bench TrainStepMulti30kVariants -benchtime 40x -count 3)
# run on an otherwise idle machine: every variant trains on the same real batches, and the table takes the median
# of its runs. It replaces the long runs' own rates, which are only comparable when every run had the machine to
# itself, with the same threads.
SPEED_FILE=${SPEED_FILE:-}
# EXTRA_SET adds --set KEY=VALUE settings (space-separated) to the training runs, e.g. train.threads=1.
EXTRA_SET=${EXTRA_SET:-}
DATA=$MULTI30K
OUT=${OUT:-attention-table}
VARIANTS=${VARIANTS:-"additive dot scaled-dot general cosine concat local multi-head hard additive+input-feeding additive+self-attention"}
ATTEND=${ATTEND:-}
if [ -z "$ATTEND" ]; then
  make -s build
  ATTEND=bin/attend
fi
mkdir -p "$OUT"
. scripts/openblas-core.sh   # the OpenBLAS kernels of this CPU for every run below (uses ATTEND)

stats() { # the attention JSON lines of translate --attention → "max entropy monotone"
  python3 - "$1" <<'EOF'
import json, math, sys
rows = mx = ent = mono = steps = 0
for line in open(sys.argv[1]):
    tr = json.loads(line)
    prev = None
    for row in tr["attention"][:len(tr["output"])]:
        if not row:
            continue
        rows += 1
        mx += max(row)
        ent -= sum(w * math.log(w) for w in row if w > 0)
        j = max(range(len(row)), key=row.__getitem__)
        if prev is not None:
            steps += 1
            mono += j >= prev
        prev = j
print(f"{mx/rows:.2f} {ent/rows:.2f} {mono/max(steps,1):.2f}")
EOF
}

printf '| variant | epochs | valid ppl | test_2016 BLEU (greedy, tok-lc) | train tok/s | max weight | entropy | monotone |\n'
printf '|---|---|---|---|---|---|---|---|\n'
for v in $VARIANTS; do
  attention=${v%%+*}
  feeding=false
  layers=0
  case $v in
    *+input-feeding*) feeding=true ;;
    *+self-attention*) layers=1 ;;
  esac
  run="$OUT/$v"
  if [ ! -s "$run.done" ]; then
    "$ATTEND" train --config configs/small.yaml --src "$DATA/train.de" --tgt "$DATA/train.en" \
      --valid-src "$DATA/val.de" --valid-tgt "$DATA/val.en" --out "$run.ckpt" --no-progress \
      --set model.attention="$attention" --set model.input_feeding="$feeding" --set model.self_attention_layers="$layers" \
      --set train.epochs="$EPOCHS" --set train.max_steps="$MAX_STEPS" $(for kv in $EXTRA_SET; do echo --set "$kv"; done) \
      $( [ -e "$run.ckpt" ] && echo --resume "$run.ckpt" ) 2>"$run.train.log" >&2
    grep '^done:' "$run.train.log" >"$run.done"
  fi
  [ -s "$run.attention.jsonl" ] || "$ATTEND" translate --model "$run.best.ckpt" --input "$DATA/test_2016_flickr.de" --output "$run.hyp" \
    --beam 1 --tokenized --attention "$run.attention.jsonl" 2>/dev/null
  bleu=$("$ATTEND" eval --hyp "$run.hyp" --ref "$DATA/test_2016_flickr.en" --tok-lc | awk '/^BLEU/ {print $3; exit}')
  ppl=$(grep '"event":"valid"' "$run.metrics.jsonl" | sed 's/.*"valid_ppl":\([0-9.]*\).*/\1/' | sort -g | head -1)
  # The median of the logged windows' rates (the first, which compiles graphs, left out): a window slowed by other
  # work on the machine, or a pause, moves it little.
  speed="$run.metrics.jsonl"
  if [ "$SPEED_STEPS" -gt 0 ]; then
    speed="$run.speed.metrics.jsonl"
    if [ ! -s "$run.speed.done" ]; then
      rm -f "$run.speed.ckpt" "$speed"
      "$ATTEND" train --config configs/small.yaml --src "$DATA/train.de" --tgt "$DATA/train.en" --out "$run.speed.ckpt" \
        --no-progress --set model.attention="$attention" --set model.input_feeding="$feeding" \
        --set model.self_attention_layers="$layers" --set train.max_steps="$SPEED_STEPS" --set train.log_every=20 \
        --set train.save_every=0 2>"$run.speed.log" >&2
      grep '^done:' "$run.speed.log" >"$run.speed.done"
      rm -f "$run.speed.ckpt"
    fi
  fi
  if [ -n "$SPEED_FILE" ]; then
    toks=$(python3 -c 'import re, statistics, sys
rates = [float(m.group(1)) for l in open(sys.argv[1])
         if (m := re.match(r"BenchmarkTrainStepMulti30kVariants/" + re.escape(sys.argv[2]) + r"-\d+\s.*?([\d.]+) tgt_tok/s", l))]
print(round(statistics.median(rates)) if rates else "?")' "$SPEED_FILE" "$v")
  else
    toks=$(python3 -c 'import json, statistics, sys
rates = [json.loads(l)["tok_per_s"] for l in open(sys.argv[1]) if "\"tok_per_s\"" in l]
print(round(statistics.median(rates[1:] or rates)))' "$speed")
  fi
  read -r mx ent mono < <(stats "$run.attention.jsonl")
  printf '| %s | %s | %.2f | %s | %s | %s | %s | %s |\n' "$v" "$EPOCHS" "$ppl" "$bleu" "$toks" "$mx" "$ent" "$mono"
done
