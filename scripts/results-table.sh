#!/usr/bin/env bash
# results-table.sh — docs/results.md's quality table on Multi30k De→En: each recipe is trained once, then translates
# test_2016_flickr and test_2017_flickr greedily and with beam 5 (plain, and with the length penalty that scores
# best on val among ALPHAS); the table gives sacreBLEU's 13a BLEU of the detokenized output and the tokenized,
# lowercased BLEU (--tok-lc) beside it, the epochs trained and the training wall time. The PyTorch reference
# implementation of the `small` model (TORCH_SCRIPT, see docs/speed.md) trains for the same epochs (greedy only: it
# has no beam search); TORCH=0 leaves it out. MULTI30K names the Multi30k directory (scripts/get-multi30k.sh DIR
# fetches it); the examples below leave it and TORCH_SCRIPT out.
#
#   MULTI30K=data/multi30k TORCH_SCRIPT=path/to/reference.py scripts/results-table.sh   # default, multi30k, multi30k-wide, small, PyTorch
#   RECIPES="small:configs/small.yaml" TORCH=0 scripts/results-table.sh
#   MAX_STEPS=20 EPOCHS=1 OUT=/tmp/smoke scripts/results-table.sh   # a smoke run
#   ATTEND=/path/to/attend scripts/results-table.sh         # a fixed binary
#   OPENBLAS_NUM_THREADS=1 EXTRA_SET=train.threads=1 RECIPES=small:configs/small.yaml TORCH=0 scripts/results-table.sh &
#   OPENBLAS_NUM_THREADS=1 EXTRA_SET=train.threads=1 RECIPES=multi30k:configs/multi30k.yaml TORCH=0 scripts/results-table.sh &
#                                                           # two recipes at once, one core each
#
# Runs are kept in OUT (default results-table/): a recipe whose training finished is not trained again, and an
# interrupted one resumes from its checkpoint, so the table can be built over several sittings. A recipe whose
# config file does not exist is skipped. EPOCHS, when set, overrides every recipe's train.epochs.
set -euo pipefail
. "$(dirname "$0")/need.sh"
need_multi30k train.de train.en val.de val.en test_2016_flickr.de test_2016_flickr.en test_2017_flickr.de test_2017_flickr.en
TORCH=${TORCH:-1}
[ "$TORCH" = 1 ] && need_torch_script
cd "$(dirname "$0")/.."
DATA=$MULTI30K
OUT=${OUT:-results-table}
RECIPES=${RECIPES:-"default:configs/default.yaml multi30k:configs/multi30k.yaml multi30k-wide:configs/multi30k-wide.yaml small:configs/small.yaml"}
EPOCHS=${EPOCHS:-}
MAX_STEPS=${MAX_STEPS:-0}
# ALPHAS are the GNMT length penalties tried with beam 5 on val; the best one gets its own rows on the test sets.
ALPHAS=${ALPHAS:-"0 1 1.5 2"}
# EXTRA_SET adds --set KEY=VALUE settings (space-separated) to the training runs, e.g. train.threads=1.
EXTRA_SET=${EXTRA_SET:-}
ATTEND=${ATTEND:-}
if [ -z "$ATTEND" ]; then
  make -s build
  ATTEND=bin/attend
fi
mkdir -p "$OUT"
. scripts/openblas-core.sh   # the OpenBLAS kernels of this CPU for every run below (uses ATTEND)

bleu() { # hyp ref [eval flags…] → the BLEU figure
  local hyp=$1 ref=$2
  shift 2
  "$ATTEND" eval --hyp "$hyp" --ref "$ref" "$@" | awk '/^BLEU/ {print $3; exit}'
}
elapsed() { # metrics.jsonl → training wall time of the run so far, in minutes
  python3 -c 'import json, sys
t = [json.loads(l)["elapsed_s"] for l in open(sys.argv[1]) if "\"elapsed_s\"" in l]
print(f"{t[-1] / 60:.1f}")' "$1"
}

printf '| recipe | search | epochs | train time (min) | test_2016 13a | test_2016 tok-lc | test_2017 13a | test_2017 tok-lc |\n'
printf '|---|---|---|---|---|---|---|---|\n'
for recipe in $RECIPES; do
  name=${recipe%%:*}
  config=${recipe#*:}
  if [ ! -e "$config" ]; then
    echo "results-table: no $config; skipping $name" >&2
    continue
  fi
  run="$OUT/$name"
  sets=(--set train.max_steps="$MAX_STEPS")
  [ -n "$EPOCHS" ] && sets+=(--set train.epochs="$EPOCHS")
  for kv in $EXTRA_SET; do sets+=(--set "$kv"); done
  if [ ! -s "$run.done" ]; then
    "$ATTEND" train --config "$config" --src "$DATA/train.de" --tgt "$DATA/train.en" \
      --valid-src "$DATA/val.de" --valid-tgt "$DATA/val.en" --out "$run.ckpt" --no-progress "${sets[@]}" \
      $( [ -e "$run.ckpt" ] && echo --resume "$run.ckpt" ) 2>>"$run.train.log" >&2
    grep '^done:' "$run.train.log" | tail -1 >"$run.done"
  fi
  epochs=$(sed 's/.*steps, \([0-9]*\) epochs.*/\1/' "$run.done")
  minutes=$(elapsed "$run.metrics.jsonl")
  # The length penalty is chosen on val, never on the test sets: beam 5 with each of ALPHAS, the best tok-lc BLEU.
  alpha=0 best=-1
  for a in $ALPHAS; do
    hyp="$run.val.beam5.alpha$a.tok"
    [ -s "$hyp" ] || "$ATTEND" translate --model "$run.best.ckpt" --input "$DATA/val.de" --output "$hyp" \
      --beam 5 --alpha "$a" --tokenized 2>/dev/null
    b=$(bleu "$hyp" "$DATA/val.en" --tok-lc)
    echo "results-table: $name, val, beam 5, --alpha $a: BLEU $b" >&2
    if awk -v b="$b" -v best="$best" 'BEGIN {exit !(b > best)}'; then alpha=$a best=$b; fi
  done
  searches=("greedy:--beam 1" "beam 5:--beam 5 --alpha 0")
  [ "$alpha" = 0 ] || searches+=("beam 5, \`--alpha $alpha\` (chosen on val):--beam 5 --alpha $alpha")
  for search in "${searches[@]}"; do
    label=${search%%:*}
    flags=(${search#*:})
    row="| $name | $label | $epochs | $minutes |"
    for test in test_2016_flickr test_2017_flickr; do
      hyp="$run.$test.$(echo "${flags[*]}" | tr -d ' -')"
      [ -s "$hyp.tok" ] || "$ATTEND" translate --model "$run.best.ckpt" --input "$DATA/$test.de" --output "$hyp.tok" \
        "${flags[@]}" --tokenized 2>/dev/null
      [ -s "$hyp.txt" ] || "$ATTEND" translate --model "$run.best.ckpt" --input "$DATA/$test.de" --output "$hyp.txt" \
        "${flags[@]}" 2>/dev/null
      row="$row $(bleu "$hyp.txt" "$DATA/$test.en") | $(bleu "$hyp.tok" "$DATA/$test.en" --tok-lc) |"
    done
    echo "$row"
  done
done

if [ "$TORCH" = 1 ]; then
  torch="$OUT/torch"
  if [ ! -s "$torch.jsonl" ]; then
    torchSteps=()
    [ "$MAX_STEPS" != 0 ] && torchSteps=(--max-steps "$MAX_STEPS")
    /usr/bin/python3 "$TORCH_SCRIPT" --src "$DATA/train.de" --tgt "$DATA/train.en" \
      --valid-src "$DATA/val.de" --valid-tgt "$DATA/val.en" --emb 128 --enc 128 --dec 256 --att 128 --threads 2 \
      --epochs "${EPOCHS:-10}" "${torchSteps[@]}" --save "$torch.pt" >"$torch.train.jsonl"
    for test in test_2016_flickr test_2017_flickr; do
      /usr/bin/python3 "$TORCH_SCRIPT" --src "$DATA/train.de" --tgt "$DATA/train.en" \
        --test-src "$DATA/$test.de" --test-tgt "$DATA/$test.en" --emb 128 --enc 128 --dec 256 --att 128 --threads 2 \
        --load "$torch.pt" | sed "s/^{/{\"test_set\":\"$test\",/" >>"$torch.jsonl.part"
    done
    mv "$torch.jsonl.part" "$torch.jsonl"
  fi
  python3 - "$torch.train.jsonl" "$torch.jsonl" <<'EOF'
import json, sys
train = [json.loads(l) for l in open(sys.argv[1])]
tests = [json.loads(l) for l in open(sys.argv[2])]
epochs = [r for r in train if r.get("event") == "epoch"]
minutes = sum(r.get("seconds", 0) for r in epochs) / 60
bleu = {r["test_set"]: f"{r['bleu']:.2f}" for r in tests if r.get("event") == "test"}
print(f"| PyTorch small | greedy | {len(epochs)} | {minutes:.1f} | — | {bleu.get('test_2016_flickr', '—')} | — | {bleu.get('test_2017_flickr', '—')} |")
EOF
fi
