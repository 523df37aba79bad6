# Checks that translate refuses --shortlist with K above the 50 the lexicon keeps, and --threshold without --alignments, which it used to ignore.
crashed() { [ "$1" -ge 128 ] || grep -qE '^panic:|^goroutine |fatal error:' "$2"; }
msgs=()
for args in "--shortlist 100,500" "--threshold 0.3"; do
  echo 'ein mann .' | timeout 60 "$ATTEND" translate --model base.ckpt $args >out 2>err
  code=$?
  if crashed $code err; then echo "panic: translate $args: $(grep -m1 -E 'panic:|fatal error:' err)"; exit; fi
  [ $code -eq 0 ] && { echo "wrong: translate $args accepted: $(head -1 out)"; exit; }
  msgs+=("$(sed 's/^attend: //' err | head -1)")
done
if [[ ${msgs[0]} == *"at most 50"* && ${msgs[1]} == *"--alignments"* ]]; then
  echo "error: ${msgs[0]}; ${msgs[1]}"
else
  echo "wrong: ${msgs[0]}; ${msgs[1]}"
fi
