# 28-01: --out that exists and is not a regular file (a named pipe; a character device made with mknod, as root)
# is refused before any work, without hanging, and the node stays as it was.
. "$REPO/scripts/sweep-lib.sh"
mkfifo f.ckpt
limited 30 fifo $T --out f.ckpt
if [ ! -p f.ckpt ]; then
  a="lost the named pipe f.ckpt was replaced"
else
  a=$(judge fifo "" "f.ckpt.metrics.jsonl f.metrics.jsonl" "--out f.ckpt" "named pipe")
fi
if mknod fake c 1 3 2>/dev/null; then
  limited 30 dev $T --out fake
  if [ ! -c fake ]; then
    b="lost the device node fake was replaced by a regular file"
  else
    b=$(judge dev "" "fake.metrics.jsonl" "--out fake" "character device")
  fi
else
  b="error (the device half needs root to run mknod: skipped)"
fi
combine "$a" "$b"
