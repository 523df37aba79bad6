# Checks that align, eval --perplexity and heatmap --ref skip a pair of 20,000-word lines with a warning naming the line, and finish quickly in 4 GB.
crashed() { [ "$1" -ge 128 ] || grep -qE '^panic:|^goroutine |fatal error:' "$2"; }
long() { awk -v seed="$2" 'BEGIN { srand(seed) } { for (i = 1; i <= NF; i++) w[n++] = $i } END { for (i = 0; i < 20000; i++) printf "%s%s", (i ? " " : ""), w[int(rand() * n)]; print "" }' "$1"; }
{ head -3 va.de; long va.de 1; head -1 va.de; } >p.de
{ head -3 va.en; long va.en 2; head -1 va.en; } >p.en
seen=()
for cmd in "align --src p.de --tgt p.en" "eval --src p.de --ref p.en --perplexity" "heatmap --input p.de --ref p.en --out-dir gallery"; do
  name=${cmd%% *}
  start=$SECONDS
  (ulimit -v 4194304; timeout 90 "$ATTEND" $cmd --model base.ckpt >out 2>err)
  code=$?
  took=$((SECONDS - start))
  if crashed $code err; then echo "panic: $name: $(grep -m1 -E 'panic:|fatal error:' err)"; exit; fi
  [ $code -eq 124 ] && { echo "hang: $name still running after 90 s"; exit; }
  [ $code -eq 0 ] || { echo "error: $name refused the file: $(tail -1 err)"; exit; }
  grep -q 'p.de and p.en line 4: ' err || { echo "wrong: $name finished in ${took}s without a warning naming line 4"; exit; }
  seen+=("$name ${took}s")
done
echo "ok: line 4 (20,000 words a side) skipped with a warning naming it by ${seen[*]}"
