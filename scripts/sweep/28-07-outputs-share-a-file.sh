# 28-07: two outputs of one run on the same file (--metrics m.ckpt, --metrics m.best.ckpt, --cpuprofile m.ckpt,
# with --out m.ckpt) are refused; neither silently replaces the other.
. "$REPO/scripts/sweep-lib.sh"
# one NAME JUDGEMENT: a run that ended with exit 0 let one output replace the other.
one() {
  if [ "$RC" -eq 0 ]; then echo "lost $1: exit 0, one file written as two outputs"; else echo "$2"; fi
}
limited 60 a $T --out m.ckpt --metrics m.ckpt
ra=$(one "--metrics m.ckpt" "$(judge a "" "m.ckpt" "--metrics m.ckpt" "--out m.ckpt")")
rm -f m.*
limited 60 b $T --out m.ckpt --metrics m.best.ckpt --valid-src va.de --valid-tgt va.en
rb=$(one "--metrics m.best.ckpt" "$(judge b "" "m.ckpt m.best.ckpt" "--metrics m.best.ckpt" "best checkpoint")")
rm -f m.*
limited 60 c $T --out m.ckpt --cpuprofile m.ckpt
rc=$(one "--cpuprofile m.ckpt" "$(judge c "" "m.ckpt" "--cpuprofile m.ckpt" "--out m.ckpt")")
combine "$ra" "$rb" "$rc"
