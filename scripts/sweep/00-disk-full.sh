# 00 (#6): a disk that fills up while training (a 7 MB tmpfs in a private mount namespace: root only) stops the
# run with a clear error, and the last checkpoint written still loads.
. "$REPO/scripts/sweep-lib.sh"
if [ "$(id -u)" -ne 0 ] || ! command -v unshare >/dev/null || ! unshare -m true 2>/dev/null; then
  echo "error (skipped: a small tmpfs needs root and unshare -m here)"
  exit
fi
mkdir small
cat >full.sh <<SCRIPT
mount -t tmpfs -o size=7m tmpfs small || exit 99
$T --out small/m.ckpt --max-steps 40 --set train.save_every=2
echo "exit \$?" >status
cp small/m.ckpt kept.ckpt 2>/dev/null
SCRIPT
limited 100 p unshare -m --propagation private sh full.sh
if [ "$RC" -eq 99 ]; then echo "error (skipped: cannot mount a tmpfs here: $(first p))"; exit; fi
RC=$(sed 's/exit //' status 2>/dev/null || echo 0)
if crashed p; then echo "panic $(first p)"; exit; fi
if [ ! -f kept.ckpt ]; then echo "wrong no checkpoint was kept (exit $RC): $(first p)"; exit; fi
limited 60 load sh -c "echo 'ein mann .' | '$ATTEND' translate --model kept.ckpt"
if [ "$RC" -ne 0 ]; then echo "lost the last checkpoint no longer loads: $(first load)"; exit; fi
if grep -q "no space left on device" p.err; then
  echo "error $(grep -m1 'no space left' p.err | cut -c1-160); the last checkpoint loads"
else
  echo "wrong the run did not report the full disk: $(first p)"
fi
