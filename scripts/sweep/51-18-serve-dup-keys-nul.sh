# 51-18: attend serve refuses with 400 (a JSON error) a request with a key given twice (where the last used to win) and a text with an escaped NUL (\u0000, translated where a raw NUL gets 400).
. "$REPO/scripts/sweep-lib.sh"
. "$REPO/scripts/sweep-serve-lib.sh"
serve_start s --model base.ckpt --beam 1
[ -n "$SERVE_PID" ] || { echo "wrong serve did not start: $(first s)"; exit; }
bad="" msgs=""
for body in '{"text": "ein mann .", "text": "eine frau ."}' '{"text": "ein mann .", "TEXT": "eine frau ."}' \
  '{"texts": ["ein mann ."], "beam": 1, "beam": 5}' '{"text": "ein \u0000 mann ."}' '{"texts": ["ein mann .", "\u0000"]}'; do
  http r "$SERVE_URL/v1/translate" -H 'Content-Type: application/json' --data-binary "$body"
  if [ "$CODE" = 400 ] && grep -q '"error"' r.body; then msgs+="$(sed 's/^{"error":"//' r.body | cut -c1-60); "
  else bad+="$body: $CODE $(head -c 80 r.body | tr "\n" " "); "; fi
done
stop "$SERVE_PID"
if crashed s; then echo "panic $(first s)"
elif [ -n "$bad" ]; then echo "security ${bad:0:220}"
else echo "error ${msgs:0:220}"; fi
