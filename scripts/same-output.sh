#!/usr/bin/env bash
# same-output.sh OLD NEW: checks that two attend binaries give the same results with float32 products, for a
# refactor that must not change a single bit. It trains a small recurrent model and a small Transformer with each
# binary for STEPS steps (default 60) on the first LINES (default 3000) pairs of Multi30k De→En, compares the
# losses of every step and the tensors of the checkpoints (weights and Adam's moments; the JSON header, which
# holds the config, is left out), then translates the test set with the OLD binary's models through both
# binaries: greedy, beam 5, n-best 3, a shortlist, and an ensemble of two models (seeds 1 and 2), of each kind.
#
# Each binary's float32 settings come from the environment (set but empty: the defaults), for binaries from
# before and after a flag changed:
#   OLD_TRAIN / NEW_TRAIN    extra train flags   (default: --set train.precision=float32)
#   OLD_DECODE / NEW_DECODE  extra decode flags  (default: --precision float32)
# MULTI30K is the corpus folder (train.de, train.en, test_2016_flickr.de); WORK keeps the files (default: a
# temporary folder). Exit status 0 when everything matched.
set -euo pipefail
OLD=$(realpath "$1") NEW=$(realpath "$2") CONFIGS=$(realpath "$(dirname "$0")/../configs")
: "${MULTI30K:?set MULTI30K to the Multi30k folder}" "${STEPS:=60}" "${LINES:=3000}"
: "${OLD_TRAIN=--set train.precision=float32}" "${NEW_TRAIN=--set train.precision=float32}"
: "${OLD_DECODE=--precision float32}" "${NEW_DECODE=--precision float32}"
WORK=${WORK:-$(mktemp -d)}
mkdir -p "$WORK" && cd "$WORK"
head -n "$LINES" "$MULTI30K/train.de" > src.txt
head -n "$LINES" "$MULTI30K/train.en" > tgt.txt
head -n 200 "$MULTI30K/test_2016_flickr.de" > input.txt
fail=0
same() { # same WHAT A B
	if cmp -s "$2" "$3"; then echo "same      $1"; else echo "DIFFERENT $1 ($2 $3)"; fail=1; fi
}
tensors() { # the checkpoint's bytes after its JSON header
	python3 -c 'import sys,struct,hashlib
b=open(sys.argv[1],"rb").read(); n=struct.unpack("<Q",b[12:20])[0]
print(hashlib.sha256(b[20+n:-32]).hexdigest())' "$1"
}
losses() { python3 -c 'import sys,json
for l in open(sys.argv[1]):
  r=json.loads(l)
  if "loss" in r: print(r["step"], repr(r["loss"]))' "$1"; }
rnn=(--set model.emb=64 --set model.enc_hidden=64 --set model.dec_hidden=128 --set model.attn_dim=64
	--set data.subword=none --set data.merges=0 --set model.dropout=0.1)
tf=(--config "$CONFIGS/transformer.yaml" --set model.d_model=64 --set model.ff=128 --set model.layers=2
	--set model.heads=4 --set data.subword=none --set data.merges=0 --set train.warmup=20)
for kind in rnn rnn2 tf tf2; do
	case $kind in rnn) args=("${rnn[@]}" --seed 1) ;; rnn2) args=("${rnn[@]}" --seed 2) ;; tf) args=("${tf[@]}" --seed 1) ;; tf2) args=("${tf[@]}" --seed 2) ;; esac
	for b in old new; do
		bin=$OLD flags=$OLD_TRAIN
		[ $b = new ] && bin=$NEW flags=$NEW_TRAIN
		# shellcheck disable=SC2086
		"$bin" train --src src.txt --tgt tgt.txt --out $kind.$b.ckpt --no-valid --no-progress --overwrite \
			--max-steps "$STEPS" --threads 2 --set train.log_every=1 --set train.save_every=0 "${args[@]}" $flags 2> $kind.$b.log >/dev/null ||
			{ echo "train $kind with $b failed:"; tail -3 $kind.$b.log; exit 1; }
		losses $kind.$b.metrics.jsonl > $kind.$b.losses
		tensors $kind.$b.ckpt > $kind.$b.tensors
	done
	same "$kind: $(wc -l < $kind.old.losses) training losses" $kind.old.losses $kind.new.losses
	same "$kind: checkpoint tensors" $kind.old.tensors $kind.new.tensors
done
# The translations use models the OLD binary trained for DECODE_STEPS (default 600) steps, kept in WORK for
# the next run: an untrained model writes the same few words for every sentence, which would prove little.
: "${DECODE_STEPS:=600}"
for kind in rnn rnn2 tf tf2; do
	case $kind in rnn) args=("${rnn[@]}" --seed 1) ;; rnn2) args=("${rnn[@]}" --seed 2) ;; tf) args=("${tf[@]}" --seed 1) ;; tf2) args=("${tf[@]}" --seed 2) ;; esac
	[ -f $kind.trained.ckpt ] && continue
	# shellcheck disable=SC2086
	"$OLD" train --src src.txt --tgt tgt.txt --out $kind.trained.ckpt --no-valid --no-progress --overwrite \
		--max-steps "$DECODE_STEPS" --threads 2 "${args[@]}" $OLD_TRAIN 2> $kind.trained.log >/dev/null ||
		{ echo "train $kind for decoding failed:"; tail -3 $kind.trained.log; exit 1; }
done
modes=("greedy:--beam 1" "beam5:--beam 5" "nbest3:--beam 5 --n-best 3" "shortlist:--beam 5 --shortlist 100,20"
	"shortlist-greedy:--beam 1 --shortlist 100,20" "ensemble:--beam 5 --model KIND2.trained.ckpt" "ensemble-greedy:--beam 1 --model KIND2.trained.ckpt")
for kind in rnn tf; do
	for mode in "${modes[@]}"; do
		name=${mode%%:*} flags=${mode#*:} flags=${flags//KIND/$kind}
		for b in old new; do
			bin=$OLD dflags=$OLD_DECODE
			[ $b = new ] && bin=$NEW dflags=$NEW_DECODE
			# shellcheck disable=SC2086
			"$bin" translate --model $kind.trained.ckpt --input input.txt --max-len 40 $flags $dflags > $kind.$name.$b.txt 2> $kind.$name.$b.err ||
				echo "failed: $(tail -1 $kind.$name.$b.err)" >> $kind.$name.$b.txt
		done
		same "$kind: translate $name ($(wc -l < $kind.$name.old.txt) lines)" $kind.$name.old.txt $kind.$name.new.txt
	done
done
echo "files in $WORK"
exit $fail
