# Checks that align --gold refuses a link beyond its sentence (999-999) naming the file, line and lengths, and that --one-based with a 0-0 link says "position 0 in a one-based file".
crashed() { [ "$1" -ge 128 ] || grep -qE '^panic:|^goroutine |fatal error:' "$2"; }
head -5 s.de >a.de; head -5 s.en >a.en
printf '0-0\n0-0 999-999\n0-0\n0-0\n0-0\n' >far.align
printf '1-1\n0-0\n1-1\n1-1\n1-1\n' >zero.align
msgs=()
for args in "--gold far.align" "--gold zero.align --one-based"; do
  timeout 60 "$ATTEND" align --model base.ckpt --src a.de --tgt a.en $args >out 2>err
  code=$?
  if crashed $code err; then echo "panic: align $args: $(grep -m1 -E 'panic:|fatal error:' err)"; exit; fi
  [ $code -eq 0 ] && { echo "wrong: align $args scored it: $(tail -1 out)"; exit; }
  msgs+=("$(sed 's/^attend: //' err | head -1)")
done
if [[ ${msgs[0]} == *"far.align line 2"*"999-999"*"source and"*"target words"* && ${msgs[1]} == *"zero.align line 2"*"position 0 in a one-based file"* ]]; then
  echo "error: ${msgs[0]}; ${msgs[1]}"
else
  echo "wrong: the errors do not say what is wrong where: ${msgs[0]}; ${msgs[1]}"
fi
