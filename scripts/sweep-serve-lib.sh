# sweep-serve-lib.sh — helpers for the cases of scripts/sweep.sh that run attend serve; they source it after
# sweep-lib.sh: . "$REPO/scripts/sweep-serve-lib.sh"

# serve_start NAME ARGS...: starts `attend serve --addr 127.0.0.1:0 ARGS` in the background, its stdout in
# NAME.out and its stderr in NAME.err, and waits up to 30 s for it to listen or to exit. Then SERVE_PID is its
# process id and SERVE_URL its address (http://127.0.0.1:PORT), or SERVE_URL is empty, SERVE_PID too, and RC is
# its exit status when it did not start.
serve_start() {
  local name=$1 i
  shift
  "$ATTEND" serve --addr 127.0.0.1:0 "$@" >"$name.out" 2>"$name.err" &
  SERVE_PID=$! SERVE_URL="" RC=""
  for i in $(seq 300); do
    SERVE_URL=$(grep -o 'http://127\.0\.0\.1:[0-9]*' "$name.out" 2>/dev/null | head -n 1)
    [ -n "$SERVE_URL" ] && return
    if ! kill -0 "$SERVE_PID" 2>/dev/null; then
      wait "$SERVE_PID"
      RC=$? SERVE_PID=""
      return
    fi
    sleep 0.1
  done
  stop "$SERVE_PID"
  RC=124 SERVE_PID=""
}

# http NAME CURL-ARGS...: runs curl (at most 30 s) with the response body in NAME.body, and sets CODE to the
# HTTP status (000 when there was no answer).
http() {
  local name=$1
  shift
  CODE=$(curl -s -m 30 -o "$name.body" -w '%{http_code}' "$@")
}
