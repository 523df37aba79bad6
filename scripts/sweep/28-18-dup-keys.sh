# Checks that a YAML config with a key or a section given twice is refused naming both lines, where the last one used to win silently.
crashed() { [ "$1" -ge 128 ] || grep -qE '^panic:|^goroutine |fatal error:' "$2"; }
printf 'model:\n  emb: 32\n  cell: lstm\n  emb: 16\n' >key.yaml
printf 'model:\n  emb: 16\ntrain:\n  lr: 0.003\nmodel:\n  cell: gru\n' >section.yaml
msgs=()
for cfg in key.yaml section.yaml; do
  timeout 60 "$ATTEND" train --config $cfg --src s.de --tgt s.en --max-steps 2 --no-progress --out m.ckpt >out 2>err
  code=$?
  if crashed $code err; then echo "panic: --config $cfg: $(grep -m1 -E 'panic:|fatal error:' err)"; exit; fi
  [ $code -eq 0 ] && { echo "wrong: --config $cfg trained: $(grep -m1 '^model:' out)"; exit; }
  msgs+=("$(sed 's/^attend: //' err | head -1)")
done
if [[ ${msgs[0]} == *key.yaml*"model.emb is given twice, at lines 2 and 4"* && ${msgs[1]} == *section.yaml*"section model is given twice, at lines 1 and 5"* ]]; then
  echo "error: ${msgs[0]}; ${msgs[1]}"
else
  echo "wrong: the errors do not name both lines: ${msgs[0]}; ${msgs[1]}"
fi
