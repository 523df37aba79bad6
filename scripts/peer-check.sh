#!/usr/bin/env bash
# peer-check.sh — checks that attend computes what the PyTorch peer (../shared/bench/peer_torch.py) computes: the
# peer's small model, with its seed-1 initial weights or the weights it saved (WEIGHTS=peer.pt), is written in
# attend's layout (scripts/peer_weights.py), and model.TestGradientsMatchPeer loads it into attend and compares
# the loss and every gradient on one Multi30k batch without dropout, through the fused and the unfused graphs.
#
#   scripts/peer-check.sh
#   WEIGHTS=peer.pt scripts/peer-check.sh
#
# Needs Debian's python3-torch.
set -euo pipefail
cd "$(dirname "$0")/.."
/usr/bin/python3 -c 'import torch' 2>/dev/null || { echo "peer-check: needs PyTorch: apt-get install -y python3-torch" >&2; exit 2; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
/usr/bin/python3 scripts/peer_weights.py "$out" ${WEIGHTS:+"$WEIGHTS"}
ATTEND_PEER_WEIGHTS=$out go test -count=1 -run '^TestGradientsMatchPeer$' -v ./model/ | grep -E '^(---|ok|FAIL|\s+peer_test)'
