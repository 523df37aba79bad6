# Checks that a Transformer trained on a recurrent preset (configs/demo.yaml: constant learning rate, no warm-up), which learns next to nothing, warns on stderr in one line naming configs/transformer.yaml.
. "$REPO/scripts/sweep-lib.sh"
limited 100 t $T --out m.ckpt --max-steps 2 --set model.type=transformer
crashed t && { echo "panic: $(first t)"; exit; }
[ "$HUNG" = yes ] && { echo "wrong: still training after 100 s"; exit; }
[ "$RC" -ne 0 ] && { echo "wrong: exit $RC: $(first t)"; exit; }
lines=$(grep -c 'configs/transformer.yaml' t.err)
[ "$lines" -eq 1 ] || { echo "wrong: trained without a warning naming configs/transformer.yaml ($lines lines name it)"; exit; }
limited 100 u $ATTEND train --config "$REPO/configs/transformer.yaml" --src s.de --tgt s.en --max-steps 2 --no-progress --out u.ckpt
[ "$RC" -eq 0 ] || { echo "wrong: the Transformer preset: exit $RC: $(first u)"; exit; }
said u "warning: a Transformer" && { echo "wrong: the Transformer preset, which warms up, is warned too"; exit; }
echo "ok: $(grep -m1 'configs/transformer.yaml' t.err | cut -c1-150)"
