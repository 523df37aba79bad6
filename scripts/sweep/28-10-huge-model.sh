# Checks that training a model whose widths are each in range but together need terabytes is refused at once with the estimate, instead of dying of memory.
crashed() { [ "$1" -ge 128 ] || grep -qE '^panic:|^goroutine |fatal error:' "$2"; }
(ulimit -v 4194304; timeout 60 $T --set model.emb=65536 --set model.enc_hidden=65536 --set model.dec_hidden=65536 --out m.ckpt >out 2>err)
code=$?
if crashed $code err; then echo "panic: $(grep -m1 -E 'panic:|fatal error:' err)"; exit; fi
[ $code -eq 0 ] && { echo "wrong: trained a model of three 65536 widths"; exit; }
[ -e m.ckpt ] && { echo "wrong: exit $code but m.ckpt was written"; exit; }
if grep -q 'needs about' err && grep -q 'this machine has' err; then
  echo "error: refused: $(grep -o 'needs about [0-9.]* [kMGTPE]B' err), more than $(grep -o 'the [0-9.]* [kMGTPE]B this machine has' err | sed 's/^the //')"
else
  echo "wrong: exit $code without the estimate: $(tail -1 err)"
fi
