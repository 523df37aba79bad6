# 51-01: a file without newlines (/dev/zero) as a corpus, a config, an input, a hypothesis file, BPE merges, gold links or a metrics log is refused within seconds, in 4 GB, naming the file (it grew memory 250 MB/s, or hung).
. "$REPO/scripts/sweep-lib.sh"
printf '#version: 0.2\ne i\n' >codes.bpe
lines=()
n=0
for cmd in "train --config $REPO/configs/demo.yaml --src /dev/zero --tgt s.en --out z.ckpt --no-progress" \
  "train --config /dev/zero --src s.de --tgt s.en --out z.ckpt --no-progress" \
  "translate --model base.ckpt --input /dev/zero" \
  "eval --hyp /dev/zero --ref va.en" \
  "bpe apply --codes /dev/zero --input s.de" \
  "align --model base.ckpt --src s.de --tgt s.en --gold /dev/zero" \
  "plot --metrics /dev/zero --out c.png"; do
  n=$((n + 1))
  name=${cmd%% --*}
  (ulimit -v 4194304; exec timeout -k 5 30 $ATTEND $cmd >run$n.out 2>run$n.err)
  RC=$?
  if crashed run$n; then lines+=("panic $name: exit $RC: $(grep -m1 -E 'panic:|fatal error:|out of memory' run$n.err)"); continue; fi
  if [ "$RC" -eq 124 ] || [ "$RC" -eq 137 ]; then lines+=("hang $name still running after 30 s"); continue; fi
  if [ "$RC" -ne 1 ] || ! said run$n /dev/zero; then lines+=("wrong $name: exit $RC without naming /dev/zero: $(first run$n)"); continue; fi
  lines+=("error $name")
done
v=$(combine "${lines[@]}")
if [ "${v%% *}" = error ]; then echo "error every reader refused /dev/zero at once: $(first run1)"; else echo "$v"; fi
