# Checks that translate refuses --alpha and --beta that are infinite, NaN or negative (scores of -Inf, NaN or 0 before), as the config refuses decode.alpha.
crashed() { [ "$1" -ge 128 ] || grep -qE '^panic:|^goroutine |fatal error:' "$2"; }
n=0
for args in "--beta Inf" "--alpha Inf" "--alpha NaN" "--beta NaN" "--beta -1" "--beam 1 --beta Inf"; do
  echo 'ein mann .' | timeout 60 "$ATTEND" translate --model base.ckpt $args >out 2>err
  code=$?
  if crashed $code err; then echo "panic: translate $args: $(grep -m1 -E 'panic:|fatal error:' err)"; exit; fi
  [ $code -eq 0 ] && { echo "wrong: translate $args accepted: $(head -1 out)"; exit; }
  flag=${args##*--}; flag=--${flag%% *}
  grep -q -- "$flag is" err || { echo "wrong: translate $args: exit $code without naming $flag: $(tail -1 err)"; exit; }
  n=$((n + 1))
done
echo "error: $n settings refused, e.g. $(sed 's/^attend: //' err)"
