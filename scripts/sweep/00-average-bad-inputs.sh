# 00 (#11): attend average of a truncated checkpoint, or with --out one of its inputs, is refused; nothing is
# written.
. "$REPO/scripts/sweep-lib.sh"
head -c 100000 base.ckpt >trunc.ckpt
cp base.ckpt b.ckpt
remember base.ckpt b.ckpt
limited 60 a "$ATTEND" average --out avg.ckpt base.ckpt trunc.ckpt
ra=$(judge a "base.ckpt" "avg.ckpt" "trunc.ckpt")
limited 60 b "$ATTEND" average --out b.ckpt base.ckpt b.ckpt
rb=$(judge b "base.ckpt b.ckpt" "" "--out b.ckpt is also an input")
combine "$ra" "$rb"
