# 28-06: a second run on the --out of a running one is refused, naming the first's process; once the first is
# killed with SIGKILL its lock is stale and a third run (with --overwrite: the killed one may have saved) goes ahead.
. "$REPO/scripts/sweep-lib.sh"
$T --valid-src va.de --valid-tgt va.en --out same.ckpt --seed 1 --max-steps 2000 >one.out 2>one.err &
p1=$!
for _ in $(seq 600); do
  grep -q '^epoch 1' one.out && break
  kill -0 $p1 2>/dev/null || break
  sleep 0.1
done
if ! kill -0 $p1 2>/dev/null; then
  echo "wrong the first run ended before the second could start: $(head -n 1 one.err)"
  exit
fi
limited 60 two $T --valid-src va.de --valid-tgt va.en --out same.ckpt --seed 2
stop $p1
if crashed two; then
  a="panic $(first two)"
elif [ "$RC" -eq 0 ]; then
  a="lost both runs wrote same.ckpt (the second was not refused)"
elif [ "$RC" -eq 1 ] && said two "process $p1"; then
  a="error $(first two)"
else
  a="wrong exit $RC: $(first two)"
fi
# The killed run may have saved a checkpoint there: a new run replaces it with --overwrite (issue #51's case 4).
limited 60 three $T --out same.ckpt --seed 3 --overwrite
if crashed three; then
  b="panic $(first three)"
elif [ "$RC" -eq 0 ]; then
  b="ok a run after the first was killed goes ahead"
else
  b="wrong the lock of a killed run is not recognised as stale: $(first three)"
fi
combine "$a" "$b"
