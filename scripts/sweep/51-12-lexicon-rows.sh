# 51-12: a checkpoint whose lexicon has one row fewer than the source vocabulary (checksum valid) is refused at load, naming the lexicon, instead of changing translate --shortlist's output.
. "$REPO/scripts/sweep-lib.sh"
export LC_ALL=C
# The layout (package model/checkpoint): "ATTNCKPT", uint32 version, uint64 header length, the JSON header, the
# tensors, then the SHA-256 of everything before it. The lexicon's last row ",[…]]" becomes spaces and "]" (JSON
# white space), so the header keeps its length.
hlen=$(od -An -t u8 -j 12 -N 8 base.ckpt | tr -d ' ')
hdr=$(tail -c +21 base.ckpt | head -c "$hlen")
last=$(grep -oE ',\[[0-9,]*\]\]' <<<"$hdr" | tail -n 1)
[ -n "$last" ] && [[ $hdr == *'"lexicon":'* ]] || { echo "error (base.ckpt holds no lexicon to craft from)"; exit; }
new="${hdr%"$last"*}$(printf '%*s' $((${#last} - 1)) '')]${hdr##*"$last"}"
size=$(stat -c %s base.ckpt)
{
  head -c 20 base.ckpt
  printf '%s' "$new"
  tail -c +$((21 + hlen)) base.ckpt | head -c $((size - 20 - hlen - 32))
} >lex.ckpt
hex=$(sha256sum lex.ckpt | cut -c1-64)
printf "$(printf '%s' "$hex" | sed 's/../\\x&/g')" >>lex.ckpt
[ "$(stat -c %s lex.ckpt)" = "$size" ] || { echo "error (could not craft the checkpoint: size $(stat -c %s lex.ckpt), want $size)"; exit; }
limited 60 short sh -c "echo 'ein mann schläft .' | '$ATTEND' translate --model lex.ckpt --shortlist 100,20"
judge short "" "" "lex.ckpt" "lexicon:" "source rows for a vocabulary of"
