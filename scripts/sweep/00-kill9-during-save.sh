# 00 (#6, #11 hole 6): SIGKILL while a checkpoint is being written, five times, resuming each time: the last
# checkpoint always loads, the next run removes the killed one's temporary and goes on, and the run finishes.
. "$REPO/scripts/sweep-lib.sh"
args=(--out m.ckpt --set train.save_every=1 --set train.log_every=1 --max-steps 30)
killed=0
for cycle in 1 2 3 4 5; do
  resume=()
  [ -f m.ckpt ] && resume=(--resume m.ckpt)
  $T "${args[@]}" "${resume[@]}" >"c$cycle.out" 2>"c$cycle.err" &
  pid=$!
  # Once a checkpoint exists (the first cycle waits for it), kill as soon as a temporary of this run appears.
  for _ in $(seq 3000); do
    [ -f m.ckpt ] && compgen -G ".m.ckpt.tmp-$pid-*" >/dev/null && break
    kill -0 $pid 2>/dev/null || break
    sleep 0.01
  done
  stop $pid
  killed=$((killed + 1))
  if [ -f m.ckpt ]; then
    limited 60 "load$cycle" sh -c "echo 'ein mann .' | '$ATTEND' translate --model m.ckpt"
    if [ "$RC" -ne 0 ]; then echo "lost after kill $cycle the last checkpoint does not load: $(first "load$cycle")"; exit; fi
  fi
done
limited 90 last $T "${args[@]}" --resume m.ckpt
if crashed last; then echo "panic $(first last)"; exit; fi
left=$(compgen -G ".m.ckpt.tmp-*" | wc -l)
if [ "$RC" -eq 0 ] && grep -q '^done: 30 steps' last.out && [ "$left" -eq 0 ]; then
  echo "ok $killed kills while saving; every checkpoint loaded; the last resume removed the temporaries and finished at step 30"
else
  echo "wrong final resume: exit $RC, $left temporaries left: $(first last)"
fi
