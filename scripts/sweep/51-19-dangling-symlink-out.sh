# 51-19: a symbolic link to a missing file given as train --out, lexicon --out or translate --output is refused before any work and stays a link (no regular file in its place, none created where it points).
. "$REPO/scripts/sweep-lib.sh"
ln -s nowhere/m.ckpt d.ckpt
ln -s missing.ckpt e.ckpt
ln -s missing.txt o.txt
lines=()
limited 60 train $T --out d.ckpt
lines+=("$(judge train "" "d.metrics.jsonl" "--out d.ckpt is a symbolic link that leads nowhere")")
limited 60 lexicon "$ATTEND" lexicon --model base.ckpt --src s.de --tgt s.en --out e.ckpt
lines+=("$(judge lexicon "" "missing.ckpt" "--out e.ckpt is a symbolic link that leads nowhere")")
limited 60 translate sh -c "echo 'ein mann .' | '$ATTEND' translate --model base.ckpt --output o.txt"
lines+=("$(judge translate "" "missing.txt" "--output o.txt is a symbolic link that leads nowhere")")
for l in d.ckpt e.ckpt o.txt; do
  [ -L "$l" ] || lines+=("lost the link $l was replaced by a regular file")
done
combine "${lines[@]}"
