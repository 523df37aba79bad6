# 00 (#6, #11): a short target file, a TSV line without a tab, invalid UTF-8 and a missing validation file each
# fail before training with the file and the line.
. "$REPO/scripts/sweep-lib.sh"
head -n 199 s.en >short.en
limited 60 a "$ATTEND" train --config "$REPO/configs/demo.yaml" --src s.de --tgt short.en --out a.ckpt --no-progress
ra=$(judge a "" "a.ckpt" "short.en ended at line 199")
paste s.de s.en >c.tsv
echo "a line without a tab" >>c.tsv
limited 60 b "$ATTEND" train --config "$REPO/configs/demo.yaml" --data c.tsv --out b.ckpt --no-progress
rb=$(judge b "" "b.ckpt" "c.tsv line 201" "found neither")
{ head -n 4 s.de; printf 'ein \xff mann\n'; tail -n +6 s.de; } >u.de
limited 60 c "$ATTEND" train --config "$REPO/configs/demo.yaml" --src u.de --tgt s.en --out c.ckpt --no-progress
rc=$(judge c "" "c.ckpt" "u.de line 5" "invalid UTF-8")
limited 60 d $T --valid-src missing.de --valid-tgt va.en --out d.ckpt
rd=$(judge d "" "d.ckpt" "missing.de")
combine "$ra" "$rb" "$rc" "$rd"
