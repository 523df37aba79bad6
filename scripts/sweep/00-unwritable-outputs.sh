# 00 (#6, #11): an output under a path that cannot be a directory (--out /dev/full/x.ckpt) is refused before
# training; metrics written to /dev/full (the first sweep's full disk) stop the run with a clear error, or, since
# #28, are refused up front because /dev/full is a device.
. "$REPO/scripts/sweep-lib.sh"
limited 60 a $T --out /dev/full/x.ckpt
ra=$(judge a "" "" "/dev/full/x.ckpt")
limited 60 b $T --out m.ckpt --metrics /dev/full
if [ "$RC" -eq 1 ] && said b "no space left on device" && said b "position is saved in m.ckpt"; then
  rb="error $(first b)" # the first sweep's answer: the write fails, the run stops with its position saved
else
  rb=$(judge b "" "m.ckpt" "--metrics /dev/full is a character device")
fi
combine "$ra" "$rb"
