# 51-17: attend serve refuses --cors null, a --cors that is not an origin (not a URL, a path, another scheme) and a list with one such, naming --cors; a list of origins is served, each answered with its own origin.
. "$REPO/scripts/sweep-lib.sh"
. "$REPO/scripts/sweep-serve-lib.sh"
msgs=()
for v in null 'not a url' 'https://example.org/app' 'ftp://example.org' 'https://a.example.org,null'; do
  serve_start bad --model base.ckpt --cors "$v"
  if [ -n "$SERVE_PID" ]; then stop "$SERVE_PID"; echo "security --cors '$v' accepted"; exit; fi
  HUNG=no
  line=$(judge bad "" "" --cors)
  [ "${line%% *}" = error ] || { echo "$line (--cors '$v')"; exit; }
  msgs+=("$(first bad)")
done
serve_start ok --model base.ckpt --cors 'https://a.example.org, http://localhost:3000'
[ -n "$SERVE_PID" ] || { echo "wrong a list of two origins was refused: $(first ok)"; exit; }
bad=""
for origin in https://a.example.org http://localhost:3000; do
  got=$(curl -s -m 30 -o /dev/null -D - -X OPTIONS -H "Origin: $origin" -H 'Access-Control-Request-Method: POST' "$SERVE_URL/v1/translate" |
    tr -d '\r' | sed -n 's/^[Aa]ccess-[Cc]ontrol-[Aa]llow-[Oo]rigin: //p')
  [ "$got" = "$origin" ] || bad+="Origin $origin answered with '$got'; "
done
stop "$SERVE_PID"
if [ -n "$bad" ]; then echo "security $bad"; else echo "error ${msgs[0]}; ${msgs[1]}"; fi
