# Checks that every float flag refuses NaN, ±Inf, 1e308 and -1 alike as the command line is read, naming the flag, and that data.memory_mb 1e300 (whose bytes overflow an int64) is refused.
. "$REPO/scripts/sweep-lib.sh"
head -n 3 s.de >in.de
head -n 3 s.en >in.en
n=0
for flag in "translate --model base.ckpt --input in.de --alpha" "translate --model base.ckpt --input in.de --beta" \
  "translate --model base.ckpt --input in.de --max-len-ratio" "translate --model base.ckpt --input in.de --alignments a.txt --threshold" \
  "eval --model base.ckpt --src in.de --ref in.en --beta" "heatmap --model base.ckpt --text ein --out h.svg --alpha" \
  "align --model base.ckpt --src in.de --tgt in.en --output a.txt --threshold"; do
  name=${flag##* }
  for v in NaN +Inf -Inf 1e308 -1; do
    limited 60 r $ATTEND $flag "$v"
    crashed r && { echo "panic: $flag $v: $(first r)"; exit; }
    [ "$HUNG" = yes ] && { echo "hang: $flag $v still running after 60 s"; exit; }
    [ "$RC" -eq 0 ] && { echo "wrong: ${flag%% *} $name $v accepted"; exit; }
    said r "$name is" || { echo "wrong: ${flag%% *} $name $v: exit $RC without \"$name is\": $(first r)"; exit; }
    n=$((n + 1))
  done
done
limited 100 t $T --out m.ckpt --set data.memory_mb=1e300
crashed t && { echo "panic: train: $(first t)"; exit; }
[ "$RC" -eq 0 ] && { echo "wrong: trained with data.memory_mb 1e300 (its bytes overflow: the corpus goes to disk)"; exit; }
said t "data.memory_mb is" || { echo "wrong: train: exit $RC without naming data.memory_mb: $(first t)"; exit; }
echo "error: $n flag values and data.memory_mb 1e300 refused, e.g. $(sed 's/^attend: //' r.err | head -n 1)"
