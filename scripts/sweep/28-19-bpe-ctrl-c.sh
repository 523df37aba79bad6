# 28-19: attend bpe learn --merges 1000000 stops at once on Ctrl-C (status 130, --output untouched); bpe apply
# streams (a line is answered while the input stays open) and stops on the first Ctrl-C.
. "$REPO/scripts/sweep-lib.sh"
awk 'BEGIN { srand(19); for (i = 0; i < 10000; i++) { line = "";
  for (w = 0; w < 10; w++) { n = 4 + int(rand() * 9); word = "";
    for (c = 0; c < n; c++) word = word sprintf("%c", 97 + int(rand() * 26));
    line = line (w ? " " : "") word }
  print line } }' >big.txt
printf '#version: 0.2\ne i\n' >codes.bpe
remember codes.bpe
"$ATTEND" bpe learn --merges 1000000 --input big.txt --input tr.de --output codes.bpe >learn.out 2>learn.err &
pid=$!
sleep 1
kill -INT $pid
for _ in $(seq 100); do kill -0 $pid 2>/dev/null || break; sleep 0.1; done
if kill -0 $pid 2>/dev/null; then
  stop $pid
  a="hang bpe learn still running 10 s after Ctrl-C"
else
  wait $pid
  RC=$?
  if crashed learn; then a="panic $(first learn)"
  elif [ "$(sum codes.bpe)" != "${SUMS[codes.bpe]}" ]; then a="lost an interrupted bpe learn replaced codes.bpe"
  elif [ "$RC" -eq 130 ]; then a="ok bpe learn stopped on Ctrl-C (130), codes.bpe untouched"
  else a="wrong bpe learn after Ctrl-C: exit $RC: $(first learn)"; fi
fi
coproc APPLY { exec "$ATTEND" bpe apply --codes codes.bpe 2>apply.err; }
apid=$APPLY_PID
echo "ein mann ." >&"${APPLY[1]}"
if read -r -t 10 line <&"${APPLY[0]}"; then
  kill -INT $apid
  for _ in $(seq 100); do kill -0 $apid 2>/dev/null || break; sleep 0.1; done
  if kill -0 $apid 2>/dev/null; then
    stop $apid
    b="wrong bpe apply answered \"$line\" but ignored the first Ctrl-C"
  else
    wait $apid
    RC=$?
    if [ "$RC" -eq 130 ]; then b="ok bpe apply streams (\"$line\") and stops on Ctrl-C"; else b="wrong bpe apply after Ctrl-C: exit $RC"; fi
  fi
else
  stop $apid
  b="wrong bpe apply wrote nothing in 10 s while its input stayed open: it does not stream"
fi
combine "$a" "$b"
