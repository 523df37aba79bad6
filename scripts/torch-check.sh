#!/usr/bin/env bash
# torch-check.sh — checks that attend computes what the PyTorch reference implementation of the same model
# computes (TORCH_SCRIPT, the Python script the speed figures compare against; see docs/speed.md): its small
# model, with its seed-1 initial weights or the weights it saved (WEIGHTS=torch.pt), is written in attend's layout
# (scripts/torch_weights.py), and model.TestGradientsMatchPyTorch loads it into attend and compares the loss and
# every gradient on one Multi30k batch without dropout, through the fused and the unfused graphs.
#
#   MULTI30K=data/multi30k TORCH_SCRIPT=path/to/reference.py scripts/torch-check.sh
#   WEIGHTS=torch.pt MULTI30K=… TORCH_SCRIPT=… scripts/torch-check.sh
#
# MULTI30K is the Multi30k directory (scripts/get-multi30k.sh DIR fetches it). Needs Debian's python3-torch.
set -euo pipefail
. "$(dirname "$0")/need.sh"
need_multi30k train.de train.en
need_torch_script
if [ -n "${WEIGHTS:-}" ]; then WEIGHTS=$(cd "$(dirname "$WEIGHTS")" && pwd)/$(basename "$WEIGHTS"); fi
cd "$(dirname "$0")/.."
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
/usr/bin/python3 scripts/torch_weights.py "$out" ${WEIGHTS:+"$WEIGHTS"}
ATTEND_TORCH_WEIGHTS=$out go test -count=1 -run '^TestGradientsMatchPyTorch$' -v ./model/ | grep -E '^(---|ok|FAIL|\s+torch_test)'
