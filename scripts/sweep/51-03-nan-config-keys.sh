# Checks that a number key that is NaN or ±Inf is refused at load, naming it, even one the model does not read (model.temperature under additive attention): before, every step ran and the first save failed on NaN, losing the run.
. "$REPO/scripts/sweep-lib.sh"
printf 'model:\n  temperature: NaN\n' >nan.yaml
n=0
for set in "--set model.temperature=NaN" "--set model.temperature=+Inf" "--set train.label_smoothing=NaN" "--config nan.yaml"; do
  rm -f m.ckpt
  limited 100 t $T --out m.ckpt $set
  crashed t && { echo "panic: train $set: $(first t)"; exit; }
  [ "$HUNG" = yes ] && { echo "hang: train $set still running after 100 s"; exit; }
  key=$(echo "$set" | sed -E 's/.*--set ([a-z_.]+)=.*/\1/; s/--config nan.yaml/model.temperature/')
  if [ "$RC" -eq 0 ]; then echo "wrong: train $set trained and saved"; exit; fi
  said t "json: unsupported value" && { echo "lost: train $set ran its steps and could not save them: $(first t)"; exit; }
  said t "$key is" || { echo "wrong: train $set: exit $RC without naming $key: $(tail -n 1 t.err)"; exit; }
  n=$((n + 1))
done
echo "error: $n settings refused before any step, e.g. $(sed 's/^attend: //' t.err | head -n 1 | cut -c1-120)"
