# Checks that eval bounds --resamples and --trials (a billion resamples ran out of memory) with an error saying the limit.
crashed() { [ "$1" -ge 128 ] || grep -qE '^panic:|^goroutine |fatal error:' "$2"; }
msgs=()
for args in "--confidence --resamples 1000000000" "--paired-ar --hyp va.en --trials 1000000000"; do
  (ulimit -v 4194304; timeout 60 "$ATTEND" eval --hyp va.en --ref va.en $args >out 2>err)
  code=$?
  if crashed $code err; then echo "panic: eval $args: $(grep -m1 -E 'panic:|fatal error:' err)"; exit; fi
  [ $code -eq 124 ] && { echo "hang: eval $args still running after 60 s"; exit; }
  [ $code -eq 0 ] && { echo "wrong: eval $args accepted"; exit; }
  grep -qE -- '--(resamples|trials) is 1000000000; want 1 to' err || { echo "wrong: eval $args: exit $code without the limit: $(tail -1 err)"; exit; }
  msgs+=("$(grep -oE -- '--(resamples|trials) is 1000000000; want 1 to [0-9]+' err)")
done
echo "error: ${msgs[0]}; ${msgs[1]}"
