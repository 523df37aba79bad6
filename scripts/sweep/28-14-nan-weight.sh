# Checks that a checkpoint with one NaN weight and a valid checksum is refused at load, naming the tensor, instead of panicking in translate --n-best or printing <pad>.
crashed() { [ "$1" -ge 128 ] || grep -qE '^panic:|^goroutine |fatal error:' "$2"; }
# The layout (package model/checkpoint): "ATTNCKPT", uint32 version, uint64 header length, header, uint32 tensor
# count, then per tensor uint16 name length, name, uint8 dtype (1: float32), uint8 ndim, ndim × uint64 shape,
# values; then the SHA-256 of everything before it. The output layer's bias (out.b), which every word's score
# reads, gets a NaN (bits 0x7fc00000) as its first value.
u() { od -An -t u$2 -j $1 -N $2 base.ckpt | tr -d ' '; }
hlen=$(u 12 8)
count=$(u $((20 + hlen)) 4)
at=$((20 + hlen + 4))
name= value=
for ((k = 0; k < count; k++)); do
  nlen=$(u $at 2)
  name=$(dd if=base.ckpt bs=1 skip=$((at + 2)) count=$nlen 2>/dev/null)
  ndim=$(u $((at + 2 + nlen + 1)) 1)
  n=1
  for ((j = 0; j < ndim; j++)); do n=$((n * $(u $((at + 2 + nlen + 2 + 8 * j)) 8))); done
  value=$((at + 2 + nlen + 2 + 8 * ndim))
  [ "$name" = out.b ] && break
  at=$((value + 4 * n))
done
[ "$name" = out.b ] || { echo "error: could not find out.b in base.ckpt"; exit; }
size=$(stat -c %s base.ckpt)
head -c $((size - 32)) base.ckpt >nan.ckpt
printf '\x00\x00\xc0\x7f' | dd of=nan.ckpt bs=1 seek=$value conv=notrunc 2>/dev/null
hex=$(sha256sum nan.ckpt | cut -c1-64)
printf "$(printf '%s' "$hex" | sed 's/../\\x&/g')" >>nan.ckpt
[ "$(tail -c 32 nan.ckpt | od -An -tx1 | tr -d ' \n')" = "$hex" ] || { echo "error: could not craft the checkpoint (its checksum)"; exit; }
for args in "--n-best 2" "--beam 1"; do
  echo 'ein mann .' | timeout 60 "$ATTEND" translate --model nan.ckpt $args >out 2>err
  code=$?
  if crashed $code err; then echo "panic: translate $args of a checkpoint with a NaN in $name: $(grep -m1 -E 'panic:|fatal error:' err)"; exit; fi
  [ $code -eq 0 ] && { echo "wrong: translate $args loaded a NaN in $name and printed: $(head -1 out)"; exit; }
  grep -q "tensor $name holds NaN" err || { echo "wrong: exit $code without naming tensor $name: $(tail -1 err)"; exit; }
done
echo "error: $(grep -o "tensor $name holds NaN[^;]*" err)"
