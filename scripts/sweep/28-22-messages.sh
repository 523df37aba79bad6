# 28-22: what a user reads: no "1 sentences" or "0 epochs done", one checkpoints line, CR-only line endings
# named as such, a file name that fits translate --output DIR, and no "context canceled" after Ctrl-C in
# heatmap and eval.
. "$REPO/scripts/sweep-lib.sh"
bad=()
run tr sh -c "echo 'ein mann .' | '$ATTEND' translate --model base.ckpt"
grep -q "translated 1 sentence " tr.err || bad+=("translate says: $(grep -m1 translated tr.err)")
run t3 $T --max-steps 3 --valid-src va.de --valid-tgt va.en --set train.valid_every=3 --out m.ckpt
if grep -qE '0 epochs|[^0-9]1 (epochs|steps|batches|validations)' t3.out; then bad+=("train says: $(grep -m1 -E '0 epochs|[^0-9]1 (epochs|steps|batches|validations)' t3.out)"); fi
n=$(grep -c '^checkpoints\?: ' t3.out)
[ "$n" -eq 1 ] || bad+=("the checkpoints line is printed $n times")
tr '\n' '\r' <s.de >cr.de
tr '\n' '\r' <s.en >cr.en
run cr "$ATTEND" train --config "$REPO/configs/demo.yaml" --src cr.de --tgt cr.en --out cr.ckpt --max-steps 2 --no-progress
grep -qi "CR line endings" cr.err || bad+=("CR-only files: exit $RC, $(head -n 1 cr.out cr.err | grep -m1 -E 'kept|attend')")
mkdir outdir
run od "$ATTEND" translate --model base.ckpt --input s.de --output outdir
said od "model.ckpt" && bad+=("translate --output DIR: $(first od)")
for i in 1 2 3 4 5 6 7 8; do cat va.de; done >big.de
for i in 1 2 3 4 5 6 7 8; do cat va.en; done >big.en
for cmd in "eval --model base.ckpt --src big.de --ref big.en" "heatmap --model base.ckpt --input big.de --limit 0 --out-dir g"; do
  # shellcheck disable=SC2086
  "$ATTEND" $cmd >int.out 2>int.err &
  pid=$!
  sleep 2
  kill -INT $pid
  for _ in $(seq 100); do kill -0 $pid 2>/dev/null || break; sleep 0.1; done
  if kill -0 $pid 2>/dev/null; then
    stop $pid
    bad+=("${cmd%% *} ignored Ctrl-C")
    continue
  fi
  wait $pid
  RC=$?
  if crashed int; then echo "panic ${cmd%% *}: $(first int)"; exit; fi
  [ "$RC" -eq 130 ] || bad+=("${cmd%% *} after Ctrl-C: exit $RC")
  said int "context canceled" && bad+=("${cmd%% *} after Ctrl-C says: $(grep -m1 'context canceled' int.err)")
done
if [ ${#bad[@]} -eq 0 ]; then
  echo "ok counts agree, one checkpoints line, CR endings named, --output DIR suggests a text file, Ctrl-C quiet in eval and heatmap"
else
  printf -v joined '%s; ' "${bad[@]}"
  echo "wrong ${joined%; }"
fi
