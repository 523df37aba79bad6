# 51-14: attend serve answers 403 (a JSON error) to a Host it does not listen as (DNS rebinding), on the API and the page, answers localhost names, and answers a name --allowed-hosts gives.
. "$REPO/scripts/sweep-lib.sh"
. "$REPO/scripts/sweep-serve-lib.sh"
serve_start s --model base.ckpt
[ -n "$SERVE_PID" ] || { echo "wrong serve did not start: $(first s)"; exit; }
port=${SERVE_URL##*:}
bad=""
for path in /v1/model /; do
  http evil "$SERVE_URL$path" -H 'Host: evil.example.com'
  [ "$CODE" = 403 ] && grep -q '"error"' evil.body || bad+="Host evil.example.com on $path: $CODE $(head -c 80 evil.body | tr "\n" " "); "
done
http post "$SERVE_URL/v1/translate" -H "Host: evil.example.com:$port" -H 'Content-Type: application/json' -d '{"text": "ein mann ."}'
[ "$CODE" = 403 ] || bad+="POST with Host evil.example.com:$port: $CODE; "
for host in localhost "localhost:$port" "127.0.0.1:$port" "[::1]:$port"; do
  http ok "$SERVE_URL/v1/model" -H "Host: $host"
  [ "$CODE" = 200 ] || bad+="Host $host: $CODE; "
done
stop "$SERVE_PID"
serve_start a --model base.ckpt --allowed-hosts translate.example.org
if [ -n "$SERVE_PID" ]; then
  http allowed "$SERVE_URL/v1/model" -H 'Host: translate.example.org'
  [ "$CODE" = 200 ] || bad+="--allowed-hosts translate.example.org: $CODE; "
  stop "$SERVE_PID"
else
  bad+="--allowed-hosts: $(first a); "
fi
if crashed s; then echo "panic $(first s)"
elif [ -n "$bad" ]; then echo "security ${bad:0:200}"
else echo "error Host evil.example.com refused with 403: $(head -c 120 evil.body | tr "\n" " ")"; fi
