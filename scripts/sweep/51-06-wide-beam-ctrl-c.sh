# 51-06: Ctrl-C during a beam search as wide as the vocabulary (--beam 1000000000) stops within 2 s and writes the sentence already translated (it took the whole search, then wrote nothing).
. "$REPO/scripts/sweep-lib.sh"
# A one-word sentence (3 steps at most) before one whose search takes 27 wide steps (about 10 s); --alpha 5
# keeps the search from settling early. The progress line says when the first is done.
{ echo "Hund"; head -1 va.de; } >two.de
"$ATTEND" translate --model base.ckpt --beam 1000000000 --batch 1 --max-len-ratio 3 --alpha 5 --input two.de --output out.txt \
  --progress-every 1ms 2>tr.err &
pid=$!
for _ in $(seq 600); do grep -q ' 1/2 sentences' tr.err && break; kill -0 $pid 2>/dev/null || break; sleep 0.1; done
if ! grep -q ' 1/2 sentences' tr.err; then
  stop $pid
  echo "wrong the one-word sentence was not translated within 60 s: $(tail -1 tr.err)"
  exit
fi
kill -INT $pid
start=$(date +%s%N)
for _ in $(seq 300); do kill -0 $pid 2>/dev/null || break; sleep 0.05; done
took=$((($(date +%s%N) - start) / 1000000))
if kill -0 $pid 2>/dev/null; then stop $pid; echo "hang still running 15 s after Ctrl-C"; exit; fi
wait $pid
RC=$?
if grep -qE '^panic: |^fatal error: ' tr.err; then echo "panic $(grep -m1 -E '^panic: |^fatal error: ' tr.err)"; exit; fi
if [ "$RC" -ne 130 ]; then echo "wrong exit $RC after Ctrl-C, want 130: $(tail -1 tr.err)"; exit; fi
if [ "$(wc -l <out.txt)" -ne 1 ]; then echo "wrong stopped in ${took} ms but wrote $(wc -l <out.txt) lines, want the finished one: $(tail -1 tr.err)"; exit; fi
if [ "$took" -gt 2000 ]; then echo "hang took ${took} ms to stop after Ctrl-C"; exit; fi
echo "ok stopped ${took} ms after Ctrl-C, the finished sentence written ($(tail -1 tr.err | sed 's/^attend: //'))"
