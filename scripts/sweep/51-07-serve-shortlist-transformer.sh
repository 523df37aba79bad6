# 51-07: attend serve refuses a Transformer with --shortlist (as translate does) at start, and a SIGHUP that would swap the model served with --shortlist for a Transformer keeps the old model serving, greedy and beam answered and /healthz ok.
. "$REPO/scripts/sweep-lib.sh"
. "$REPO/scripts/sweep-serve-lib.sh"
"$ATTEND" train --config "$REPO/configs/transformer.yaml" --src s.de --tgt s.en --max-steps 10 --no-progress --out tf.ckpt \
  --set model.d_model=32 --set model.ff=64 --set model.layers=1 --set model.heads=2 >train.out 2>train.err ||
  { echo "error could not train the Transformer: $(tail -n 1 train.err)"; exit; }
j='{"text": "ein mann .", "beam": BEAM}'
serve_start start --model tf.ckpt --shortlist 100,20 --timeout 5s
if [ -n "$SERVE_PID" ]; then
  http g "$SERVE_URL/v1/translate" -H 'Content-Type: application/json' -d "${j/BEAM/1}"
  g=$CODE
  http b "$SERVE_URL/v1/translate" -H 'Content-Type: application/json' -d "${j/BEAM/3}"
  stop "$SERVE_PID"
  a="wrong serve of a Transformer with --shortlist started: greedy $g, beam $CODE"
elif crashed start; then a="panic $(first start)"
elif [ "$RC" -eq 1 ] && said start Transformer; then a="error $(first start)"
else a="wrong exit $RC: $(first start)"; fi

cp base.ckpt live.ckpt
serve_start hup --model live.ckpt --shortlist 100,20 --timeout 5s
if [ -z "$SERVE_PID" ]; then
  b="wrong serve of an RNN with --shortlist did not start: $(first hup)"
else
  cp tf.ckpt live.ckpt
  kill -HUP "$SERVE_PID"
  for _ in $(seq 100); do grep -q 'SIGHUP' hup.err && break; sleep 0.1; done
  http g "$SERVE_URL/v1/translate" -H 'Content-Type: application/json' -d "${j/BEAM/1}"
  g=$CODE
  http b "$SERVE_URL/v1/translate" -H 'Content-Type: application/json' -d "${j/BEAM/3}"
  bc=$CODE
  http h "$SERVE_URL/healthz"
  stop "$SERVE_PID"
  msg=$(grep -m1 SIGHUP hup.err)
  if crashed hup; then b="panic $(first hup)"
  elif grep -q 'SIGHUP: reloaded' hup.err; then b="wrong SIGHUP reloaded a Transformer served with --shortlist: greedy $g, beam $bc, /healthz $CODE"
  elif [ "$g$bc$CODE" = 200200200 ] && [[ $msg == *Transformer*"still serving"* ]]; then b="error ${msg:0:160}"
  else b="wrong after the refused reload: greedy $g, beam $bc, /healthz $CODE: ${msg:0:160}"; fi
fi
combine "$a" "$b"
