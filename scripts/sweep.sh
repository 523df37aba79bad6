#!/usr/bin/env bash
# sweep.sh — replay every case of the reliability sweeps (issues #11, #28 and #51) against an attend binary: one line
# per case, `case-name  VERDICT  text`, then the counts. Not part of CI: it takes minutes.
#
#   MULTI30K=path/to/multi30k scripts/sweep.sh               # builds bin/attend, runs every case
#   MULTI30K=… ATTEND=/path/to/attend scripts/sweep.sh 28-0   # a given binary; only cases whose name holds 28-0
#
# MULTI30K is the Multi30k folder (train.de, train.en, val.de, val.en). The fixtures are made once per sweep in a
# temporary directory (FIXTURES=dir keeps and reuses them): tr.de/tr.en, the first 500 lines of train; s.de/s.en,
# the first 200; va.de/va.en, the validation set; base.ckpt, `attend train --config configs/demo.yaml --src tr.de
# --tgt tr.en --max-steps 60 --out base.ckpt`.
#
# Each case is a file scripts/sweep/NNN-name.sh (28-01-…: issue #28's case 1; 00-…: the first sweep's cases). It
# starts with a one-line comment saying what it checks and runs with `bash CASE` in a fresh copy of the fixtures,
# with ATTEND (the binary, absolute), REPO (the repository root), T (`$ATTEND train --config $REPO/configs/demo.yaml
# --src s.de --tgt s.en --max-steps 10 --no-progress`, used unquoted) and ATTEND_MPI (the MPI build, or empty) in
# its environment, under a time limit (CASE_TIMEOUT seconds, default 120; then SIGKILL) and a memory limit
# (ulimit -v, SWEEP_VMEM KiB, default 8 GiB; cases that may exhaust memory set a lower one). Its last line on
# stdout is `VERDICT text`, VERDICT one of:
#   error  refused or failed with a clear error (the expected answer to bad input)
#   ok     did the right thing
#   panic  a Go panic, a crash by signal, an out-of-memory death
#   lost      a user's file was destroyed, replaced or emptied
#   hang      still running after its time limit, or after a signal it should have honoured (a case that runs
#             out of CASE_TIMEOUT counts here)
#   wrong     exit 0 or a plausible result, but wrong
#   security  the server answered what it should have refused (another site's Host, a cross-site form post, an
#             unchecked origin, a malformed request) or exposed more than it said
# The last line is `cases N  errors N  ok N  panic N  lost N  hang N  wrong N  security N`; the exit status is 1
# when any case is panic, lost, hang, wrong or security. A case stops every process it starts in the background (timeout kills the process group
# of a case that runs out of time).
set -uo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd)
if [ -z "${MULTI30K:-}" ]; then
  echo "sweep: set MULTI30K to the Multi30k folder (train.de, train.en, val.de, val.en)" >&2
  exit 2
fi
for f in train.de train.en val.de val.en; do
  [ -r "$MULTI30K/$f" ] || { echo "sweep: $MULTI30K/$f is missing" >&2; exit 2; }
done
if [ -z "${ATTEND:-}" ]; then
  make -s -C "$REPO" build >&2 || exit 2
  ATTEND=$REPO/bin/attend
  if [ -z "${ATTEND_MPI:-}" ] && command -v mpirun >/dev/null && pkg-config --exists ompi-c 2>/dev/null; then
    make -s -C "$REPO" build-mpi >&2 && ATTEND_MPI=$REPO/bin/attend-mpi
  fi
fi
ATTEND=$(cd "$(dirname "$ATTEND")" && pwd)/$(basename "$ATTEND")
[ -x "$ATTEND" ] || { echo "sweep: $ATTEND is not an executable" >&2; exit 2; }
export ATTEND REPO ATTEND_MPI=${ATTEND_MPI:-}
export T="$ATTEND train --config $REPO/configs/demo.yaml --src s.de --tgt s.en --max-steps 10 --no-progress"

work=$(mktemp -d "${TMPDIR:-/tmp}/attend-sweep.XXXXXX")
trap 'rm -rf "$work"' EXIT
fixtures=${FIXTURES:-$work/fixtures}
if [ ! -f "$fixtures/base.ckpt" ]; then
  echo "sweep: making the fixtures in $fixtures" >&2
  mkdir -p "$fixtures"
  head -n 500 "$MULTI30K/train.de" >"$fixtures/tr.de"
  head -n 500 "$MULTI30K/train.en" >"$fixtures/tr.en"
  head -n 200 "$MULTI30K/train.de" >"$fixtures/s.de"
  head -n 200 "$MULTI30K/train.en" >"$fixtures/s.en"
  cp "$MULTI30K/val.de" "$fixtures/va.de"
  cp "$MULTI30K/val.en" "$fixtures/va.en"
  (cd "$fixtures" && "$ATTEND" train --config "$REPO/configs/demo.yaml" --src tr.de --tgt tr.en --max-steps 60 \
    --out base.ckpt --no-progress >base.log 2>&1) || { echo "sweep: training base.ckpt failed:" >&2; cat "$fixtures/base.log" >&2; exit 2; }
fi

timeout_s=${CASE_TIMEOUT:-120}
vmem=${SWEEP_VMEM:-8388608}
declare -A count=([error]=0 [ok]=0 [panic]=0 [lost]=0 [hang]=0 [wrong]=0 [security]=0)
cases=0
for case in "$REPO"/scripts/sweep/*.sh; do
  name=$(basename "$case" .sh)
  if [ $# -gt 0 ]; then
    match=no
    for want in "$@"; do [[ $name == *"$want"* ]] && match=yes; done
    [ $match = yes ] || continue
  fi
  dir=$work/$name
  mkdir -p "$dir"
  cp "$fixtures"/{tr,s,va}.{de,en} "$fixtures/base.ckpt" "$dir/"
  chmod u+w "$dir"/*
  out=$(cd "$dir" && ulimit -v "$vmem" && timeout -s KILL "$timeout_s" bash "$case" 2>"$dir/.stderr")
  status=$?
  last=$(printf '%s\n' "$out" | tail -n 1)
  verdict=${last%% *}
  text=${last#"$verdict"}
  text=${text# }
  verdict=${verdict%:} # "error: …" reads as "error …"
  case $verdict in
    error | ok | panic | lost | hang | wrong | security) ;;
    *)
      if [ $status -eq 137 ]; then
        verdict=hang text="the case ran out of its ${timeout_s} s"
      else
        verdict=wrong text="no verdict (exit $status; last line: ${last:0:120})"
      fi
      ;;
  esac
  printf '%-40s %-6s %s\n' "$name" "$verdict" "$text"
  count[$verdict]=$((count[$verdict] + 1))
  cases=$((cases + 1))
  rm -rf "$dir"
done
echo "cases $cases  errors ${count[error]}  ok ${count[ok]}  panic ${count[panic]}  lost ${count[lost]}  hang ${count[hang]}  wrong ${count[wrong]}  security ${count[security]}"
[ $((count[panic] + count[lost] + count[hang] + count[wrong] + count[security])) -eq 0 ]
