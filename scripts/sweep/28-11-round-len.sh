# Checks that data.round_len above data.max_len (16384) is refused by the config's validation instead of padding every batch to 16384 tokens.
crashed() { [ "$1" -ge 128 ] || grep -qE '^panic:|^goroutine |fatal error:' "$2"; }
(ulimit -v 4194304; timeout 60 $T --set data.round_len=16384 --out m.ckpt >out 2>err)
code=$?
if crashed $code err; then echo "panic: $(grep -m1 -E 'panic:|fatal error:' err)"; exit; fi
[ $code -eq 124 ] && { echo "wrong: still training after 60 s"; exit; }
[ $code -eq 0 ] && { echo "wrong: trained with data.round_len 16384"; exit; }
if grep -q 'data.round_len is 16384' err; then echo "error: $(grep -o 'data.round_len is 16384[^;]*' err)"; else echo "wrong: exit $code without naming data.round_len: $(tail -1 err)"; fi
