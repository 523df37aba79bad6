# 51-04: train --out m.ckpt where m.ckpt holds a trained model and no --resume is given is refused before any work, naming --resume and --overwrite, and the model stays; with --overwrite the run replaces it.
. "$REPO/scripts/sweep-lib.sh"
cp base.ckpt m.ckpt
remember m.ckpt
limited 60 again $T --out m.ckpt
a=$(judge again "m.ckpt" "m.metrics.jsonl" "--out m.ckpt holds a trained model" "--resume m.ckpt" "--overwrite")
limited 60 over $T --out m.ckpt --overwrite
if crashed over; then
  b="panic $(first over)"
elif [ "$RC" -eq 0 ] && [ "$(sum m.ckpt)" != "${SUMS[m.ckpt]}" ]; then
  b="ok --overwrite replaces it"
else
  b="wrong exit $RC with --overwrite: $(first over)"
fi
combine "$a" "$b"
