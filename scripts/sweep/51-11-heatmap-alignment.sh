# 51-11: heatmap --alignment on a model trained without model.full_context_alignment is refused, naming the model and the key, instead of drawing the decoder's attention as the alignment attention.
. "$REPO/scripts/sweep-lib.sh"
limited 60 heat "$ATTEND" heatmap --model base.ckpt --text "ein mann schläft ." --out h.png --alignment
judge heat "" "h.png" "base.ckpt has no alignment attention" "model.full_context_alignment"
