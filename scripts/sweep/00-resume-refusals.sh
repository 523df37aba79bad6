# 00 (#11 hole 1): a resume that would change the model (model.emb, model.cell with data.min_freq) or has nothing
# left to do is refused naming the keys, and the checkpoint stays byte for byte.
. "$REPO/scripts/sweep-lib.sh"
cp base.ckpt r.ckpt
remember r.ckpt
base=("$ATTEND" train --src tr.de --tgt tr.en --out r.ckpt --resume r.ckpt --no-progress)
limited 60 a "${base[@]}" --max-steps 70 --set model.emb=16
ra=$(judge a "r.ckpt" "" "model.emb")
limited 60 b "${base[@]}" --max-steps 70 --set model.cell=gru --set data.min_freq=2
rb=$(judge b "r.ckpt" "" "model.cell" "data.min_freq")
limited 60 c "${base[@]}" --max-steps 60
rc=$(judge c "r.ckpt" "" "nothing left to do")
combine "$ra" "$rb" "$rc"
