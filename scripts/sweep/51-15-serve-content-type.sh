# 51-15: attend serve refuses a POST whose body is not declared application/json (text/plain, a form, none: what any web page may send cross-site) with 415 and a JSON error, and takes application/json with a charset.
. "$REPO/scripts/sweep-lib.sh"
. "$REPO/scripts/sweep-serve-lib.sh"
serve_start s --model base.ckpt --beam 1
[ -n "$SERVE_PID" ] || { echo "wrong serve did not start: $(first s)"; exit; }
body='{"text": "ein mann ."}'
bad=""
for ct in 'text/plain' 'application/x-www-form-urlencoded' 'text/plain; charset=utf-8' 'application/jsonx'; do
  http p "$SERVE_URL/v1/translate" -H "Content-Type: $ct" --data-binary "$body"
  [ "$CODE" = 415 ] && grep -q '"error"' p.body || bad+="Content-Type $ct: $CODE; "
  [ -f first.body ] || cp p.body first.body
done
http none "$SERVE_URL/v1/translate" -H 'Content-Type:' --data-binary "$body"
[ "$CODE" = 415 ] || bad+="no Content-Type: $CODE; "
http ok "$SERVE_URL/v1/translate" -H 'Content-Type: application/json; charset=utf-8' --data-binary "$body"
[ "$CODE" = 200 ] || bad+="application/json; charset=utf-8: $CODE $(head -c 80 ok.body | tr "\n" " "); "
stop "$SERVE_PID"
if crashed s; then echo "panic $(first s)"
elif [ -n "$bad" ]; then echo "security ${bad:0:200}"
else echo "error text/plain refused with 415: $(head -c 120 first.body | tr "\n" " ")"; fi
