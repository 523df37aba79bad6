# need.sh — sourced, before they change directory, by the scripts that read Multi30k or run the PyTorch reference
# implementation: `. "$(dirname "$0")/need.sh"`, then
#   need_multi30k FILE...   MULTI30K names the Multi30k directory and it holds each FILE (train.de, val.en, ...);
#                           scripts/get-multi30k.sh DIR fetches the data set into DIR
#   need_torch_script       TORCH_SCRIPT names the Python script of the PyTorch reference implementation that the
#                           speed figures compare against (see docs/speed.md), and PyTorch is installed
# Each makes its variable an absolute path (relative ones are taken from where the script was started), or says
# what is missing on standard error and exits with status 2.

need_multi30k() {
  local me f
  me=$(basename "$0")
  if [ -z "${MULTI30K:-}" ]; then
    echo "$me: set MULTI30K to the Multi30k directory (scripts/get-multi30k.sh DIR fetches it)" >&2
    exit 2
  fi
  [ -d "$MULTI30K" ] || { echo "$me: MULTI30K=$MULTI30K is not a directory" >&2; exit 2; }
  for f in "$@"; do
    [ -r "$MULTI30K/$f" ] || { echo "$me: MULTI30K=$MULTI30K has no $f (scripts/get-multi30k.sh DIR fetches the data set)" >&2; exit 2; }
  done
  MULTI30K=$(cd "$MULTI30K" && pwd)
  export MULTI30K
}

need_torch_script() {
  local me
  me=$(basename "$0")
  if [ -z "${TORCH_SCRIPT:-}" ]; then
    echo "$me: set TORCH_SCRIPT to the Python script of the PyTorch reference implementation (see docs/speed.md)" >&2
    exit 2
  fi
  [ -r "$TORCH_SCRIPT" ] || { echo "$me: TORCH_SCRIPT=$TORCH_SCRIPT cannot be read" >&2; exit 2; }
  /usr/bin/python3 -c 'import torch' 2>/dev/null ||
    { echo "$me: the PyTorch reference needs PyTorch in /usr/bin/python3: apt-get install -y python3-torch" >&2; exit 2; }
  TORCH_SCRIPT=$(cd "$(dirname "$TORCH_SCRIPT")" && pwd)/$(basename "$TORCH_SCRIPT")
  export TORCH_SCRIPT
}
