#!/usr/bin/env bash
# decode-bench.sh — greedy decoding speed of trained models, attend against the PyTorch reference implementation
# of the same model (TORCH_SCRIPT, run with --load; see docs/speed.md), on test_2016_flickr, run alternately RUNS
# times each; prints medians, ratios, BLEU (tokenized lowercased, as `attend eval --tok-lc` scores it) and
# attend's output length. Decoding speed means something only on trained models of equal quality: train both
# first, e.g. one epoch each:
#
#   bin/attend train --config configs/small.yaml --src train.de --tgt train.en --epochs 1 --out m.ckpt
#   /usr/bin/python3 "$TORCH_SCRIPT" --src train.de --tgt train.en --emb 128 --enc 128 --dec 256 \
#     --att 128 --epochs 1 --save torch.pt
#   MULTI30K=data/multi30k TORCH_SCRIPT=… ATTEND_MODEL=m.ckpt TORCH_MODEL=torch.pt RUNS=5 scripts/decode-bench.sh
#
# MULTI30K is the Multi30k directory (scripts/get-multi30k.sh DIR fetches it), TORCH_SCRIPT the Python script of
# the PyTorch reference, TORCH_MODEL the weights it saved with --save.
#
# attend runs twice per round: over the whole vocabulary, and with --shortlist $SHORTLIST (the model needs a
# lexicon: attend train learns one; `attend lexicon` adds one to an older model). Both sides run on the OpenBLAS
# kernels attend picks for this CPU, on 2 threads, batch 64, at most 80 tokens per sentence.
set -euo pipefail
. "$(dirname "$0")/need.sh"
need_multi30k train.de train.en test_2016_flickr.de test_2016_flickr.en
need_torch_script
cd "$(dirname "$0")/.."
RUNS=${RUNS:-5}
SHORTLIST=${SHORTLIST:-100,20}
DATA=$MULTI30K
: "${ATTEND_MODEL:?set ATTEND_MODEL to a trained attend checkpoint}"
: "${TORCH_MODEL:?set TORCH_MODEL to the weights the PyTorch reference saved with --save}"
SIZES=${SIZES:-"--emb 128 --enc 128 --dec 256 --att 128"}
ATTEND=${ATTEND:-}
if [ -z "$ATTEND" ]; then
  make -s build
  ATTEND=bin/attend
fi
. scripts/openblas-core.sh   # the OpenBLAS kernels of this CPU for every run below (uses ATTEND)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
src=$DATA/test_2016_flickr.de ref=$DATA/test_2016_flickr.en
for i in $(seq "$RUNS"); do
  echo "round $i/$RUNS" >&2
  for mode in full short; do
    "$ATTEND" translate --model "$ATTEND_MODEL" --input "$src" --output "$out/$mode$i.hyp" \
      --beam 1 --tokenized --batch 64 --max-len 80 $( [ $mode = short ] && echo --shortlist "$SHORTLIST" ) 2>"$out/$mode$i.log"
  done
  # shellcheck disable=SC2086
  /usr/bin/python3 "$TORCH_SCRIPT" --src "$DATA/train.de" --tgt "$DATA/train.en" $SIZES --threads 2 \
    --load "$TORCH_MODEL" --test-src "$src" --test-tgt "$ref" >"$out/torch$i.jsonl" 2>/dev/null
done
for mode in full short; do
  "$ATTEND" eval --hyp "$out/${mode}1.hyp" --ref "$ref" --tok-lc | awk '/^BLEU/ {print $3; exit}' >"$out/$mode.bleu"
  wc -w <"$out/${mode}1.hyp" >"$out/$mode.words"
done
python3 - "$out" "$RUNS" "$SHORTLIST" <<'PY'
import json, re, statistics, sys
out, runs, shortlist = sys.argv[1], int(sys.argv[2]), sys.argv[3]
rate = lambda f: float(re.search(r"\(([\d.]+) sentences/s\)", open(f).read()).group(1))
full = [rate(f"{out}/full{i}.log") for i in range(1, runs + 1)]
short = [rate(f"{out}/short{i}.log") for i in range(1, runs + 1)]
torch = [next(json.loads(l) for l in open(f"{out}/torch{i}.jsonl") if '"test"' in l) for i in range(1, runs + 1)]
prate = [p["greedy_sentences_per_s"] for p in torch]
read = lambda name: open(f"{out}/{name}").read().strip()
med = statistics.median
print("| decoder | sentences/s (median) | vs PyTorch | BLEU tok-lc | output words |")
print("|---|---|---|---|---|")
print(f"| attend, whole vocabulary | {med(full):,.0f} | {med(full)/med(prate):.2f}× | {read('full.bleu')} | {int(read('full.words')):,} |")
print(f"| attend, --shortlist {shortlist} | {med(short):,.0f} | {med(short)/med(prate):.2f}× | {read('short.bleu')} | {int(read('short.words')):,} |")
print(f"| PyTorch reference | {med(prate):,.0f} | 1.00× | {torch[0]['bleu']:.2f} | |")
print(f"\nruns: attend {[round(x) for x in full]}, shortlist {[round(x) for x in short]}, PyTorch {[round(x) for x in prate]}")
PY
