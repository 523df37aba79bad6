# 28-05: train --resume r.ckpt --out r.ckpt --metrics r.ckpt, killed with SIGKILL a second later (before its first
# save): r.ckpt must still be the checkpoint; the run is refused at once.
. "$REPO/scripts/sweep-lib.sh"
cp base.ckpt r.ckpt
remember r.ckpt
"$ATTEND" train --src tr.de --tgt tr.en --resume r.ckpt --out r.ckpt --metrics r.ckpt --max-steps 400 --no-progress >p.out 2>p.err &
pid=$!
for _ in $(seq 10); do
  sleep 0.1
  kill -0 $pid 2>/dev/null || break
done
kill -KILL $pid 2>/dev/null
wait $pid
RC=$?
judge p "r.ckpt" "" "--metrics r.ckpt" "--out r.ckpt"
