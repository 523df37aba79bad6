# 00 (#11 hole 5): a truncated checkpoint, one with a flipped byte, a directory and a text file given as --model
# are refused with a clear error, never a panic or a huge allocation.
. "$REPO/scripts/sweep-lib.sh"
ulimit -v 4194304
head -c 100000 base.ckpt >trunc.ckpt
cp base.ckpt flip.ckpt
printf '\x55' | dd of=flip.ckpt bs=1 seek=5000 conv=notrunc status=none
mkdir dir.ckpt
lines=()
for m in trunc.ckpt flip.ckpt dir.ckpt s.de; do
  limited 60 "m-$m" sh -c "echo 'ein mann .' | '$ATTEND' translate --model $m"
  lines+=("$(judge "m-$m" "" "" "$m")")
done
combine "${lines[@]}"
