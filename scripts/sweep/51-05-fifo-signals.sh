# 51-05: a command blocked opening a FIFO no one writes (translate, serve, train, eval, bpe apply) quits at the first SIGINT (130) or SIGTERM (143) instead of waiting for a safe point forever.
. "$REPO/scripts/sweep-lib.sh"
printf '#version: 0.2\ne i\n' >codes.bpe
lines=()
n=0
for cmd in "translate --model FIFO" "translate --model base.ckpt --input FIFO" "serve --model FIFO --addr 127.0.0.1:0" \
  "train --config FIFO --src s.de --tgt s.en --out f.ckpt" "eval --hyp FIFO --ref va.en" "bpe apply --codes FIFO --input s.de"; do
  for sig in INT TERM; do
    n=$((n + 1))
    mkfifo fifo$n
    name="${cmd%% --*} (${cmd#* }, SIG$sig)"
    "$ATTEND" ${cmd//FIFO/fifo$n} >run$n.out 2>run$n.err &
    pid=$!
    sleep 1
    kill -$sig $pid
    for _ in $(seq 50); do kill -0 $pid 2>/dev/null || break; sleep 0.1; done
    if kill -0 $pid 2>/dev/null; then
      stop $pid
      lines+=("hang $name: still running 5 s after the signal")
      continue
    fi
    wait $pid
    RC=$?
    want=130
    [ $sig = TERM ] && want=143
    if crashed run$n; then lines+=("panic $name: $(first run$n)"); elif [ "$RC" -ne $want ]; then lines+=("wrong $name: exit $RC, want $want"); fi
  done
done
if [ ${#lines[@]} -eq 0 ]; then echo "ok $n commands blocked on a FIFO quit at the first signal with 130/143"; else combine "${lines[@]}"; fi
