#!/usr/bin/env bash
# decode-bench.sh — greedy decoding speed of trained models, attend against the PyTorch peer
# (../shared/bench/peer_torch.py --load), on test_2016_flickr, run alternately RUNS times each; prints medians,
# ratios, BLEU (tokenized lowercased, as BENCHMARK.md scores it) and attend's output length. Decoding speed means
# something only on trained models of equal quality: train both first, e.g. one epoch each:
#
#   bin/attend train --config configs/small.yaml --src train.de --tgt train.en --epochs 1 --out m.ckpt
#   /usr/bin/python3 ../shared/bench/peer_torch.py --src train.de --tgt train.en --emb 128 --enc 128 --dec 256 \
#     --att 128 --epochs 1 --save peer.pt
#   ATTEND_MODEL=m.ckpt PEER_MODEL=peer.pt RUNS=5 scripts/decode-bench.sh
#
# attend runs twice per round: over the whole vocabulary, and with --shortlist $SHORTLIST (the model needs a
# lexicon: attend train learns one; `attend lexicon` adds one to an older model). Both sides run on the OpenBLAS
# kernels attend picks for this CPU, on 2 threads, batch 64, at most 80 tokens per sentence.
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${RUNS:-5}
SHORTLIST=${SHORTLIST:-100,20}
DATA=${DATA:-../shared/data/multi30k}
PEER=${PEER:-../shared/bench/peer_torch.py}
: "${ATTEND_MODEL:?set ATTEND_MODEL to a trained attend checkpoint}"
: "${PEER_MODEL:?set PEER_MODEL to the weights the peer saved with --save}"
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
  /usr/bin/python3 "$PEER" --src "$DATA/train.de" --tgt "$DATA/train.en" $SIZES --threads 2 \
    --load "$PEER_MODEL" --test-src "$src" --test-tgt "$ref" >"$out/peer$i.jsonl" 2>/dev/null
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
peer = [next(json.loads(l) for l in open(f"{out}/peer{i}.jsonl") if '"test"' in l) for i in range(1, runs + 1)]
prate = [p["greedy_sentences_per_s"] for p in peer]
read = lambda name: open(f"{out}/{name}").read().strip()
med = statistics.median
print("| decoder | sentences/s (median) | vs peer | BLEU tok-lc | output words |")
print("|---|---|---|---|---|")
print(f"| attend, whole vocabulary | {med(full):,.0f} | {med(full)/med(prate):.2f}× | {read('full.bleu')} | {int(read('full.words')):,} |")
print(f"| attend, --shortlist {shortlist} | {med(short):,.0f} | {med(short)/med(prate):.2f}× | {read('short.bleu')} | {int(read('short.words')):,} |")
print(f"| peer | {med(prate):,.0f} | 1.00× | {peer[0]['bleu']:.2f} | |")
print(f"\nruns: attend {[round(x) for x in full]}, shortlist {[round(x) for x in short]}, peer {[round(x) for x in prate]}")
PY
