# 28-03: train --resume r.ckpt --out r2.ckpt --cpuprofile r.ckpt: the checkpoint being resumed must not be
# truncated by the profile; the run is refused.
. "$REPO/scripts/sweep-lib.sh"
cp base.ckpt r.ckpt
remember r.ckpt
limited 60 p "$ATTEND" train --src tr.de --tgt tr.en --resume r.ckpt --out r2.ckpt --cpuprofile r.ckpt --max-steps 70 --no-progress
judge p "r.ckpt" "r2.ckpt" "--cpuprofile r.ckpt" "--resume r.ckpt"
