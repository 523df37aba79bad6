# sweep-lib.sh — helpers for the case files of scripts/sweep.sh, which source it: . "$REPO/scripts/sweep-lib.sh"

# run NAME CMD...: runs CMD with its stdout in NAME.out and its stderr in NAME.err, and sets RC to its status.
run() {
  local name=$1
  shift
  "$@" >"$name.out" 2>"$name.err"
  RC=$?
}

# limited SECONDS NAME CMD...: run, but stops CMD after SECONDS (SIGTERM, then SIGKILL 5 s later); HUNG is yes
# when it had to.
limited() {
  local secs=$1 name=$2
  shift 2
  run "$name" timeout -k 5 "$secs" "$@"
  HUNG=no
  if [ "$RC" -eq 124 ] || [ "$RC" -eq 137 ]; then HUNG=yes; fi
}

# crashed NAME: the run NAME panicked, died of a fatal runtime error (out of memory among them) or was killed by
# a signal it was not sent (RC ≥ 128 other than 130 and 143, and other than timeout's 137).
crashed() {
  grep -qE '^panic: |^goroutine [0-9]+ \[|^fatal error: |^runtime: out of memory' "$1.err" && return 0
  [ "$RC" -ge 128 ] && [ "$RC" -ne 130 ] && [ "$RC" -ne 143 ] && [ "$RC" -ne 137 ]
}

# said NAME TEXT: the stderr of run NAME holds TEXT.
said() { grep -qF -- "$2" "$1.err"; }

# first NAME: the first line of the stderr of run NAME, for a verdict's text.
first() { head -n 1 "$1.err" | cut -c1-160; }

# sum FILE: the SHA-256 of FILE, or "missing".
sum() {
  if [ -f "$1" ]; then sha256sum "$1" | cut -d' ' -f1; else echo missing; fi
}

# worst V1 V2: the worse of two verdicts (panic, lost, hang, security, wrong, error, ok, in that order).
worst() {
  local v
  for v in panic lost hang security wrong error ok; do
    if [ "$1" = $v ] || [ "$2" = $v ]; then
      echo $v
      return
    fi
  done
}

# stop PID: stops a background process this case started (SIGKILL) and waits for it.
stop() {
  kill -KILL "$1" 2>/dev/null
  wait "$1" 2>/dev/null
}

# remember FILE...: notes the content of each FILE, for judge.
declare -A SUMS
remember() {
  local f
  for f; do SUMS[$f]=$(sum "$f"); done
}

# judge NAME KEEP ABSENT TEXT...: the verdict line of a run NAME that must be refused before any work: panic if
# it crashed; lost if a remembered file of KEEP (space-separated) changed; hang if it hung; wrong if a file of ABSENT
# now exists, or if it did not exit 1 with a message holding every TEXT; else error, with the message.
judge() {
  local name=$1 keep=$2 absent=$3 f w
  shift 3
  if crashed "$name"; then echo "panic exit $RC: $(first "$name")"; return; fi
  for f in $keep; do
    if [ "$(sum "$f")" != "${SUMS[$f]}" ]; then echo "lost $f was changed (exit $RC)"; return; fi
  done
  if [ "${HUNG:-no}" = yes ]; then echo "hang still running after its time limit"; return; fi
  for f in $absent; do
    if [ -e "$f" ]; then echo "wrong wrote $f (exit $RC): $(first "$name")"; return; fi
  done
  if [ "$RC" -ne 1 ]; then echo "wrong exit $RC: $(first "$name")"; return; fi
  for w; do
    said "$name" "$w" || { echo "wrong the message does not name '$w': $(first "$name")"; return; }
  done
  echo "error $(first "$name")"
}

# combine LINE...: one verdict line from several: the worst verdict, and the texts joined by "; ".
combine() {
  local v=ok line texts=""
  for line; do
    v=$(worst "$v" "${line%% *}")
    texts+="${texts:+; }${line#* }"
  done
  echo "$v $texts"
}
