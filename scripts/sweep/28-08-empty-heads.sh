# Checks that translate --attention of a multi-head model whose translation is empty writes the heads of its </s> row instead of panicking ("Force of a batch without targets").
crashed() { [ "$1" -ge 128 ] || grep -qE '^panic:|^goroutine |fatal error:' "$2"; }
# A multi-head model trained at a learning rate of 5 without clipping ends some translations at once.
$T --set model.attention=multi-head --set train.lr=5 --set train.clip=0 --out mh.ckpt >train.log 2>&1 || { echo "error: could not train the multi-head model: $(tail -1 train.log)"; exit; }
head -50 va.de >in.de
"$ATTEND" translate --model mh.ckpt --beam 1 --input in.de --output out.en 2>/dev/null
line=$(grep -n '^$' out.en | head -1 | cut -d: -f1)
[ -n "$line" ] || { echo "ok: no empty translation among 50 lines to check (nothing to recover)"; exit; }
sed -n "${line}p" in.de >one.de
(ulimit -v 4194304; timeout 60 "$ATTEND" translate --model mh.ckpt --beam 1 --batch 1 --input one.de --attention a.jsonl >one.en 2>err)
code=$?
if crashed $code err; then echo "panic: translate --attention on va.de line $line (empty translation): $(grep -m1 -E 'panic:|fatal error:' err)"; exit; fi
[ $code -eq 0 ] || { echo "error: exit $code: $(tail -1 err)"; exit; }
if grep -q '"output":\[\]' a.jsonl && grep -q '"heads":\[\[\[' a.jsonl; then
  echo "ok: va.de line $line translates to nothing; --attention has its </s> row, averaged and per head"
else
  echo "wrong: va.de line $line: --attention lacks the empty output or its heads: $(head -c 200 a.jsonl)"
fi
