# 00 (#6, #11 hole 2): Ctrl-C during training saves the exact position, exits 130 and prints the resume command,
# which then finishes the run.
. "$REPO/scripts/sweep-lib.sh"
$T --out m.ckpt --max-steps 100000 --set train.log_every=1 >p.out 2>p.err &
pid=$!
for _ in $(seq 600); do
  grep -q '^step 3 ' p.out && break
  kill -0 $pid 2>/dev/null || break
  sleep 0.1
done
kill -INT $pid
for _ in $(seq 300); do kill -0 $pid 2>/dev/null || break; sleep 0.1; done
if kill -0 $pid 2>/dev/null; then stop $pid; echo "wrong training ignored Ctrl-C for 30 s"; exit; fi
wait $pid
RC=$?
if crashed p; then echo "panic $(first p)"; exit; fi
if [ "$RC" -ne 130 ] || ! grep -q '^resume with: attend train ' p.err; then echo "wrong exit $RC: $(first p)"; exit; fi
step=$(sed -n 's/.*training interrupted at step \([0-9]*\) .*/\1/p' p.err)
limited 90 r "$ATTEND" train --config "$REPO/configs/demo.yaml" --src s.de --tgt s.en --out m.ckpt --resume m.ckpt --max-steps $((step + 3)) --no-progress
if [ "$RC" -eq 0 ] && grep -q "^done: $((step + 3)) steps" r.out; then
  echo "ok Ctrl-C saved step $step (exit 130, resume command printed); the resume finished at step $((step + 3))"
else
  echo "wrong the resume from step $step: exit $RC: $(first r)"
fi
