# Checks that translate --beam far beyond the target vocabulary (10,000,000) is cut to the vocabulary with a note, or refused, instead of allocating 15 GB.
crashed() { [ "$1" -ge 128 ] || grep -qE '^panic:|^goroutine |fatal error:' "$2"; }
for beam in 10000000 5000; do
  (ulimit -v 4194304; echo 'ein mann .' | timeout 60 "$ATTEND" translate --model base.ckpt --beam $beam >out 2>err)
  code=$?
  if crashed $code err; then echo "panic: --beam $beam: $(grep -m1 -E 'panic:|fatal error:' err)"; exit; fi
  [ $code -eq 124 ] && { echo "hang: --beam $beam still running after 60 s"; exit; }
  if [ $code -ne 0 ]; then
    grep -q -- '--beam' err && { echo "error: $(tail -1 err)"; exit; }
    echo "wrong: --beam $beam: exit $code without naming --beam: $(tail -1 err)"; exit
  fi
  grep -q "note: --beam $beam is more than the model's" err || { echo "wrong: --beam $beam accepted without a note"; exit; }
done
echo "ok: $(grep -m1 note: err | sed 's/^note: //'), in 4 GB"
