# 51-16: attend serve --addr :PORT, 0.0.0.0:PORT and [::]:PORT (every interface) warns loudly on stderr at start; 127.0.0.1 does not.
. "$REPO/scripts/sweep-lib.sh"
bad=""
for addr in :0 0.0.0.0:0 '[::]:0' 127.0.0.1:0; do
  "$ATTEND" serve --model base.ckpt --addr "$addr" >s.out 2>s.err &
  pid=$!
  for _ in $(seq 300); do grep -q 'http://' s.out && break; kill -0 $pid 2>/dev/null || break; sleep 0.1; done
  stop $pid
  if ! grep -q 'http://' s.out; then
    [ "$addr" = '[::]:0' ] && grep -qi 'address family\|cannot assign' s.err && continue # no IPv6 here
    bad+="--addr $addr did not start: $(head -n 1 s.err); "
  elif [ "$addr" = 127.0.0.1:0 ]; then
    grep -q WARNING s.err && bad+="--addr $addr warned; "
  else
    grep -qF "WARNING: --addr $addr listens on EVERY network interface" s.err || bad+="--addr $addr: no warning; "
  fi
done
if [ -n "$bad" ]; then echo "security ${bad:0:200}"
else echo "ok --addr :0, 0.0.0.0:0 and [::]:0 warn on stderr at start (WARNING: … listens on EVERY network interface); 127.0.0.1:0 does not"; fi
