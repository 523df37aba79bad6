# Checks that --max-len-ratio 1e19 (whose product with a length overflows an int) is refused by translate, eval and heatmap, naming the flag: before, translate wrote one word a sentence.
. "$REPO/scripts/sweep-lib.sh"
head -n 3 s.de >in.de
head -n 3 s.en >in.en
n=0
for cmd in "translate --model base.ckpt --input in.de" "eval --model base.ckpt --src in.de --ref in.en" "heatmap --model base.ckpt --text ein --out h.svg"; do
  limited 60 r $ATTEND $cmd --max-len-ratio 1e19
  crashed r && { echo "panic: $cmd: $(first r)"; exit; }
  [ "$HUNG" = yes ] && { echo "hang: $cmd --max-len-ratio 1e19 still running after 60 s"; exit; }
  if [ "$RC" -eq 0 ]; then
    words=$(awk '{ n += NF } END { print n + 0 }' r.out)
    echo "wrong: ${cmd%% *} --max-len-ratio 1e19 accepted ($words words in 3 lines: $(head -n 1 r.out | cut -c1-60))"
    exit
  fi
  said r "--max-len-ratio is" || { echo "wrong: ${cmd%% *}: exit $RC without naming --max-len-ratio: $(first r)"; exit; }
  n=$((n + 1))
done
echo "error: $n commands refuse it: $(sed 's/^attend: //' r.err | head -n 1)"
