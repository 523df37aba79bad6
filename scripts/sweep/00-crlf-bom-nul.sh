# 00 (#6): a corpus with CRLF line endings and a byte order mark trains like the plain one; NUL bytes in a line
# give a clear error or are read as text, never a panic.
. "$REPO/scripts/sweep-lib.sh"
{ printf '\xef\xbb\xbf'; sed 's/$/\r/' s.de; } >crlf.de
{ printf '\xef\xbb\xbf'; sed 's/$/\r/' s.en; } >crlf.en
limited 90 plain $T --out plain.ckpt
limited 90 crlf "$ATTEND" train --config "$REPO/configs/demo.yaml" --src crlf.de --tgt crlf.en --max-steps 10 --no-progress --out crlf.ckpt
if crashed crlf; then a="panic $(first crlf)"
elif [ "$RC" -ne 0 ]; then a="wrong CRLF with a BOM: exit $RC: $(first crlf)"
elif [ "$(grep -E '^(training data|model):' plain.out)" = "$(grep -E '^(training data|model):' crlf.out)" ]; then
  a="ok CRLF with a BOM reads as the plain corpus (same pairs, same vocabularies)"
else
  a="wrong CRLF with a BOM reads differently: $(grep -m1 '^model:' crlf.out)"
fi
sed '3s/ /\x00/; 7s/$/\x00\x00/' s.de >nul.de
limited 90 nul "$ATTEND" train --config "$REPO/configs/demo.yaml" --src nul.de --tgt s.en --max-steps 5 --no-progress --out nul.ckpt
if crashed nul; then b="panic $(first nul)"
elif [ "$RC" -eq 0 ]; then b="ok NUL bytes read as text"
elif [ "$RC" -eq 1 ] && said nul "nul.de"; then b="error $(first nul)"
else b="wrong NUL bytes: exit $RC: $(first nul)"; fi
combine "$a" "$b"
