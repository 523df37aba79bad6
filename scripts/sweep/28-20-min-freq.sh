# Checks that data.min_freq so high that no word is left (100000) is refused with the counts, and that one leaving over a tenth of the tokens <unk> warns with them.
crashed() { [ "$1" -ge 128 ] || grep -qE '^panic:|^goroutine |fatal error:' "$2"; }
timeout 100 $T --set data.min_freq=100000 --out m.ckpt >out 2>err
code=$?
if crashed $code err; then echo "panic: $(grep -m1 -E 'panic:|fatal error:' err)"; exit; fi
[ $code -eq 0 ] && { echo "wrong: trained a model whose vocabulary is $(grep -o 'vocab [0-9]*→[0-9]*' out)"; exit; }
grep -q 'without a word' err || { echo "wrong: exit $code without saying the vocabulary is empty: $(tail -1 err)"; exit; }
refused=$(sed 's/^attend: //' err | head -1)
timeout 100 $T --set data.min_freq=5 --max-steps 1 --out w.ckpt >out 2>err
grep -q 'warning: data.min_freq 5 makes' out || { echo "wrong: data.min_freq 5 makes a third of s.de <unk> without a warning"; exit; }
echo "error: $refused"
