# 00 (#11 hole 2): translate answers a line while its input stays open (it streams), SIGINT stops it with 130
# and SIGTERM with 143, within seconds.
. "$REPO/scripts/sweep-lib.sh"
lines=()
for sig in INT TERM; do
  coproc TR { exec "$ATTEND" translate --model base.ckpt 2>/dev/null; }
  pid=$TR_PID
  echo "ein mann fährt fahrrad ." >&"${TR[1]}"
  if ! read -r -t 20 answer <&"${TR[0]}"; then
    stop $pid
    lines+=("wrong translate answered nothing in 20 s while its input stayed open")
    continue
  fi
  kill -$sig $pid
  for _ in $(seq 100); do kill -0 $pid 2>/dev/null || break; sleep 0.1; done
  if kill -0 $pid 2>/dev/null; then stop $pid; lines+=("wrong translate ignored SIG$sig"); continue; fi
  wait $pid
  RC=$?
  want=130
  [ $sig = TERM ] && want=143
  if [ "$RC" -eq $want ]; then lines+=("ok streams (\"$answer\"), SIG$sig exits $RC"); else lines+=("wrong SIG$sig: exit $RC, want $want"); fi
done
combine "${lines[@]}"
