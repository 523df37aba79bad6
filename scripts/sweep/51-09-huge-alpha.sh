# Checks that an α of 1e308 (every length penalty +Inf, every n-best score 0, the ranking arbitrary) is refused by translate, eval and the config's decode.alpha, naming it.
. "$REPO/scripts/sweep-lib.sh"
head -n 3 s.de >in.de
head -n 3 s.en >in.en
n=0
for cmd in "translate --model base.ckpt --input in.de --n-best 3" "eval --model base.ckpt --src in.de --ref in.en"; do
  limited 60 r $ATTEND $cmd --alpha 1e308
  crashed r && { echo "panic: $cmd: $(first r)"; exit; }
  [ "$HUNG" = yes ] && { echo "hang: $cmd --alpha 1e308 still running after 60 s"; exit; }
  if [ "$RC" -eq 0 ]; then echo "wrong: ${cmd%% *} --alpha 1e308 accepted: $(head -n 1 r.out | cut -c1-80)"; exit; fi
  said r "--alpha is" || { echo "wrong: ${cmd%% *}: exit $RC without naming --alpha: $(first r)"; exit; }
  n=$((n + 1))
done
limited 100 t $T --out m.ckpt --set decode.alpha=1e308
crashed t && { echo "panic: train: $(first t)"; exit; }
[ "$RC" -eq 0 ] && { echo "wrong: trained a checkpoint with decode.alpha 1e308"; exit; }
said t "decode.alpha is" || { echo "wrong: train: exit $RC without naming decode.alpha: $(first t)"; exit; }
echo "error: refused by $n commands and the config: $(sed 's/^attend: //' r.err | head -n 1)"
