# 28-04: train --resume r.ckpt --out r2.ckpt --metrics r.ckpt: the metrics log must not be written into the
# checkpoint being resumed; the run is refused.
. "$REPO/scripts/sweep-lib.sh"
cp base.ckpt r.ckpt
remember r.ckpt
limited 60 p "$ATTEND" train --src tr.de --tgt tr.en --resume r.ckpt --out r2.ckpt --metrics r.ckpt --max-steps 70 --no-progress
judge p "r.ckpt" "r2.ckpt" "--metrics r.ckpt" "--resume r.ckpt"
