#!/usr/bin/env bash
# bench.sh — attend against the PyTorch reference implementation of the same model (see docs/speed.md), same
# data, same machine, run alternately, RUNS times each; prints medians and ratios.
#
#   MULTI30K=data/multi30k TORCH_SCRIPT=path/to/reference.py scripts/bench.sh   # small model, 3 runs of 200
#                                                                               # measured steps after 20 warm-up
#   CONFIG=base RUNS=5 MULTI30K=… TORCH_SCRIPT=… scripts/bench.sh
#   SET="train.precision=bf16" MULTI30K=… TORCH_SCRIPT=… scripts/bench.sh              # attend with config keys set
#
# MULTI30K is the Multi30k directory (scripts/get-multi30k.sh DIR fetches it), TORCH_SCRIPT the Python script of
# the PyTorch reference. Both sides run on 2 threads and on the same OpenBLAS kernels, those attend picks for this
# CPU (see below). Needs Debian's python3-torch for the reference.
set -euo pipefail
. "$(dirname "$0")/need.sh"
need_multi30k train.de train.en test_2016_flickr.de test_2016_flickr.en
need_torch_script
cd "$(dirname "$0")/.."
CONFIG=${CONFIG:-small}
RUNS=${RUNS:-3}
STEPS=${STEPS:-200}
WARM=${WARM:-20}
DATA=$MULTI30K
sets=()
for kv in ${SET:-}; do sets+=(--set "$kv"); done
case $CONFIG in
  small) SIZES="--emb 128 --enc 128 --dec 256 --att 128" ;;
  base)  SIZES="--emb 256 --enc 256 --dec 512 --att 256" ;;
  *) echo "CONFIG must be small or base" >&2; exit 2 ;;
esac
[ -x /usr/bin/time ] || { echo "bench: needs /usr/bin/time: apt-get install -y time" >&2; exit 2; }
make -s build
ATTEND=bin/attend
. scripts/openblas-core.sh   # the OpenBLAS kernels of this CPU for every run below (uses ATTEND)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
total=$((STEPS + WARM))
rss() { grep 'Maximum resident' "$1" | awk '{print $NF}'; }
for i in $(seq "$RUNS"); do
  echo "run $i/$RUNS: attend" >&2
  /usr/bin/time -v bin/attend train --config "configs/$CONFIG.yaml" \
    --src "$DATA/train.de" --tgt "$DATA/train.en" --out "$out/a$i.ckpt" --max-steps "$total" --threads 2 \
    --set train.log_every="$WARM" --set train.save_every=0 "${sets[@]}" --no-progress >/dev/null 2>"$out/a$i.time"
  bin/attend translate --model "$out/a$i.ckpt" --input "$DATA/test_2016_flickr.de" \
    --output "$out/a$i.hyp" 2>"$out/a$i.decode"
  echo "run $i/$RUNS: PyTorch" >&2
  /usr/bin/time -v /usr/bin/python3 "$TORCH_SCRIPT" --src "$DATA/train.de" --tgt "$DATA/train.en" \
    --test-src "$DATA/test_2016_flickr.de" --test-tgt "$DATA/test_2016_flickr.en" $SIZES \
    --max-steps "$total" --threads 2 >"$out/p$i.jsonl" 2>"$out/p$i.time"
  echo "$(rss "$out/a$i.time") $(rss "$out/p$i.time")" >"$out/rss$i"
done
/usr/bin/python3 - "$out" "$RUNS" "$WARM" "$CONFIG" "$STEPS" <<'PY'
import json, re, statistics, sys
out, runs, warm, config, steps = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], int(sys.argv[5])
def med(xs): return statistics.median(xs)
a_tok, a_dec, a_rss, a_len, p_tok, p_dec, p_rss = [], [], [], [], [], [], []
for i in range(1, runs + 1):
    recs = [json.loads(l) for l in open(f"{out}/a{i}.metrics.jsonl") if '"step"' in l]
    timed = [r for r in recs if r["step"] > warm]          # windows after the warm-up (graph compiles)
    a_tok.append(sum(r["tgt_tokens"] for r in timed) / sum(r["tgt_tokens"] / r["tok_per_s"] for r in timed))
    a_dec.append(float(re.search(r"\(([\d.]+) sentences/s\)", open(f"{out}/a{i}.decode").read()).group(1)))
    hyp = open(f"{out}/a{i}.hyp").read().split("\n")[:-1]
    a_len.append(sum(len(h.split()) for h in hyp) / len(hyp))
    torch = [json.loads(l) for l in open(f"{out}/p{i}.jsonl")]
    p_tok.append(next(r["tgt_tokens_per_s"] for r in torch if r["event"] == "epoch"))
    p_dec.append(next(r["greedy_sentences_per_s"] for r in torch if r["event"] == "test"))
    ra, rp = open(f"{out}/rss{i}").read().split()
    a_rss.append(int(ra) / 1024); p_rss.append(int(rp) / 1024)
print(f"attend vs the PyTorch reference — {config}, Multi30k De→En, {steps} steps after {warm} warm-up, 2 threads, medians of {runs} runs")
print(f"{'figure':<28}{'attend':>12}{'PyTorch':>12}{'ratio':>10}")
print(f"{'train tgt tokens/s':<28}{med(a_tok):>12.0f}{med(p_tok):>12.0f}{med(a_tok)/med(p_tok):>9.2f}x")
print(f"{'greedy decode sentences/s':<28}{med(a_dec):>12.0f}{med(p_dec):>12.0f}{med(a_dec)/med(p_dec):>9.2f}x")
print(f"{'peak RSS of training, MB':<28}{med(a_rss):>12.0f}{med(p_rss):>12.0f}{med(a_rss)/med(p_rss):>9.2f}x")
print(f"(attend's mean output length on test_2016_flickr: {med(a_len):.1f} tokens; per run tok/s attend "
      f"{[round(x) for x in a_tok]}, PyTorch {[round(x) for x in p_tok]}; decode attend {[round(x) for x in a_dec]}, PyTorch {[round(x) for x in p_dec]})")
PY
