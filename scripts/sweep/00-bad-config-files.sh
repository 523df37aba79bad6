# 00 (#11 hole 3): a config file with an unknown key, a wrong type or a YAML syntax error, and a missing config
# file, are refused naming the file (and the line and key).
. "$REPO/scripts/sweep-lib.sh"
cp "$REPO/configs/demo.yaml" unknown.yaml
sed -i 's/^  emb:/  embedding_size:/' unknown.yaml
cp "$REPO/configs/demo.yaml" type.yaml
sed -i 's/^  batch: .*/  batch: many/' type.yaml
printf 'model:\n  emb: [32\n' >syntax.yaml
lines=()
for f in unknown.yaml type.yaml syntax.yaml missing.yaml; do
  limited 60 "${f%.yaml}" "$ATTEND" train --config "$f" --src s.de --tgt s.en --out m.ckpt --no-progress
  lines+=("$(judge "${f%.yaml}" "" "m.ckpt" "$f")")
done
combine "${lines[@]}"
