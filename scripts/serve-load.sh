#!/usr/bin/env bash
# serve-load.sh — load test of `attend serve` with vegeta (app/serve's TestLoad), against 127.0.0.1 only, and
# the same model's batch throughput with `attend translate --input` for comparison:
#
#   ATTEND_LOAD_MODEL=m.ckpt ATTEND_LOAD_INPUT=test_2016_flickr.de scripts/serve-load.sh
#
# 1. translate --input the file with the search of the test (greedy unless BEAM is set): sentences/s, three
#    times before the attacks and three times after (TRANSLATE_RUNS), the median for the comparison;
# 2. start attend serve on 127.0.0.1:$PORT and read its resident memory;
# 3. full load: CLIENTS concurrent clients (64) send the file's sentences, one per request, as fast as they
#    get answers, for DURATION (60s), and the cores the server and the load generator used (the load generator
#    runs on the same cores, which translate --input has to itself: the ratio printed does not correct for it);
# 4. half load: requests at half the throughput of step 3, at a constant rate, for DURATION;
# 5. half the clients: CLIENTS/2 clients as fast as they get answers, for DURATION;
# 6. reload under full load: CLIENTS clients as in step 3, for DURATION; half-way through, RELOAD_MODEL (default:
#    the same checkpoint again) replaces the served file atomically (the server serves a copy of the model in a
#    temporary directory) and the server gets SIGHUP: its log must say it reloaded, and no request may fail;
# 7. read the server's resident memory again, stop it with SIGTERM.
# It prints the figures and fails if any request failed. Everything stops by itself; the server is stopped on
# exit. Note the machine's load (uptime) beside the figures: other work on the cores changes them. LOGDIR, if
# set, keeps the server's log (one line per request, with its milliseconds) and the figures there.
set -euo pipefail
cd "$(dirname "$0")/.."
: "${ATTEND_LOAD_MODEL:?set ATTEND_LOAD_MODEL to a trained checkpoint}"
: "${ATTEND_LOAD_INPUT:?set ATTEND_LOAD_INPUT to a file of sentences, one per line}"
CLIENTS=${CLIENTS:-64}
DURATION=${DURATION:-60s}
BEAM=${BEAM:-1}
PORT=${PORT:-18089}
make -s build
ATTEND=bin/attend
GO=${GO:-go}
out=$(mktemp -d)
pid=
cleanup() {
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then kill -TERM "$pid"; wait "$pid" || true; fi
  if [ -n "${LOGDIR:-}" ]; then mkdir -p "$LOGDIR" && cp "$out/serve.log" "$out/load.txt" "$LOGDIR/" 2>/dev/null || true; fi
  rm -rf "$out"
}
trap cleanup EXIT
rss() { awk '/^VmRSS:/ {printf "%.0f", $2/1024}' "/proc/$1/status"; }

# translate --input, TRANSLATE_RUNS times (3), before the attacks and as many after: the median is the reference.
baseline() {
  for _ in $(seq "${TRANSLATE_RUNS:-3}"); do
    env -u OPENBLAS_CORETYPE "$ATTEND" translate --model "$ATTEND_LOAD_MODEL" --input "$ATTEND_LOAD_INPUT" --beam "$BEAM" \
      --output "$out/translate.txt" 2>"$out/translate.log"
    sed -n 's/.*(\([0-9.]*\) sentences\/s).*/\1/p' "$out/translate.log" | tee -a "$out/batch.txt"
  done | tr '\n' ' ' | sed 's/^/attend translate --input, beam '"$BEAM"', sentences\/s: /'
  echo
}
echo "load before: $(uptime)"
baseline

# The server serves a copy, which the reload phase replaces.
mkdir "$out/model"
live="$out/model/$(basename "$ATTEND_LOAD_MODEL")"
cp "$ATTEND_LOAD_MODEL" "$live"
env -u OPENBLAS_CORETYPE "$ATTEND" serve --model "$live" --addr "127.0.0.1:$PORT" --beam "$BEAM" \
  >"$out/serve.out" 2>"$out/serve.log" &
pid=$!
for _ in $(seq 100); do
  curl -fs "http://127.0.0.1:$PORT/healthz" >/dev/null 2>&1 && break
  sleep 0.2
done
curl -fs "http://127.0.0.1:$PORT/healthz" >/dev/null
rss_start=$(rss "$pid")
echo "serve started: RSS $rss_start MiB"

"$GO" test -c -o "$out/serve.test" ./app/serve/
attack() { # clients rate
  ATTEND_LOAD_URL="http://127.0.0.1:$PORT" ATTEND_LOAD_INPUT="$ATTEND_LOAD_INPUT" ATTEND_LOAD_CLIENTS=$1 \
    ATTEND_LOAD_RATE=$2 ATTEND_LOAD_DURATION=$DURATION ATTEND_LOAD_BEAM=$BEAM \
    "$out/serve.test" -test.run '^TestLoad$' -test.count=1 | grep '^LOAD' | tee -a "$out/load.txt"
}
echo "full load: $CLIENTS clients as fast as they are answered, $DURATION"
# The cores the server and the load generator (which shares them, unlike translate --input) used in this phase:
# their CPU seconds over its wall-clock seconds.
cpu() { awk -v t="$(getconf CLK_TCK)" '{printf "%.2f", ($14 + $15) / t}' "/proc/$1/stat"; }
serve_cpu=$(cpu "$pid"); wall=$(date +%s.%N)
TIMEFORMAT='%U %S' && { time attack "$CLIENTS" 0; } 2>"$out/attack.time"
awk -v s0="$serve_cpu" -v s1="$(cpu "$pid")" -v w0="$wall" -v w1="$(date +%s.%N)" '{ u = $1; s = $2 } END {
  printf "cores used at full load: server %.2f, load generator %.2f\n", (s1 - s0) / (w1 - w0), (u + s) / (w1 - w0) }' "$out/attack.time"
full=$(awk '/^LOAD/ {for (i = 1; i <= NF; i++) if ($i ~ /^throughput=/) {sub("throughput=", "", $i); print $i}}' "$out/load.txt" | tail -1)
half=$(awk -v f="$full" 'BEGIN {printf "%d", f / 2}')
echo "rss after full load: $(rss "$pid") MiB; load: $(uptime)"
echo "half load: $half requests/s, $DURATION"
attack "$CLIENTS" "$half"
echo "half the clients: $((CLIENTS / 2)) clients as fast as they are answered, $DURATION"
attack "$((CLIENTS / 2))" 0
echo "reload under full load: $CLIENTS clients as fast as they are answered, $DURATION, SIGHUP half-way with ${RELOAD_MODEL:-the same checkpoint}"
cp "${RELOAD_MODEL:-$ATTEND_LOAD_MODEL}" "$live.next"
seconds=$(awk -v d="$DURATION" 'BEGIN {n = d + 0; if (d ~ /ms$/) n /= 1000; else if (d ~ /m$/) n *= 60; else if (d ~ /h$/) n *= 3600; print n}')
reload_ok=1
attack "$CLIENTS" 0 &
attacker=$!
sleep "$(awk -v s="$seconds" 'BEGIN {print s / 2}')"
mv -f "$live.next" "$live"
kill -HUP "$pid"
echo "SIGHUP sent at $(date -u +%T.%N | cut -c1-12)"
wait "$attacker" || reload_ok=0
if grep -q 'SIGHUP: reloaded' "$out/serve.log"; then
  grep 'SIGHUP: ' "$out/serve.log"
else
  echo "the server's log does not say it reloaded:"; grep 'SIGHUP' "$out/serve.log" || true
  reload_ok=0
fi
awk '/^LOAD/ {r = $0} END {n = split(r, f, " "); for (i = 1; i <= n; i++) if (f[i] ~ /^(requests|failed)=/) printf "%s ", f[i]; print "(reload phase)"}' "$out/load.txt"
rss_end=$(rss "$pid")
echo "load after: $(uptime)"
kill -TERM "$pid"
wait "$pid"
pid=
baseline
batch=$(sort -n "$out/batch.txt" | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}')
awk -v b="$batch" -v f="$full" 'BEGIN {printf "serve at full load: %.1f sentences/s = %.0f%% of translate --input (median %.1f)\n", f, 100 * f / b, b}'
echo "RSS: $rss_start MiB at start, $rss_end MiB at the end"
grep -c ' 200 ' "$out/serve.log" | awk '{print "requests answered 200: " $1}'
# The server's own view: the milliseconds of its request log, the first phase's requests, then the second's.
python3 - "$out/serve.log" "$out/load.txt" <<'PY'
import re, sys
ms = [float(m.group(1)) for m in (re.search(r"POST /v1/translate 200 1 sentences ([\d.]+) ms", l) for l in open(sys.argv[1])) if m]
counts = [int(re.search(r"requests=(\d+)", l).group(1)) for l in open(sys.argv[2]) if l.startswith("LOAD")]
start = 0
for name, n in zip(["full load", "half load", "half the clients", "reload under full load"], counts):
    part = sorted(ms[start:start + n]); start += n
    q = lambda p: part[min(len(part) - 1, int(p * len(part)))]
    print(f"server-side, {name}: p50 {q(0.5):.1f} ms, p99 {q(0.99):.1f} ms ({len(part)} requests)")
PY
grep -v ' 200 ' "$out/serve.log" | grep -E '^[0-9/]+ [0-9:]+ (GET|POST) ' | head -5 || true
if [ "$reload_ok" != 1 ]; then echo "the reload under load failed (see above)"; exit 1; fi
