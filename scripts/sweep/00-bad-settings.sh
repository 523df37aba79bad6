# 00 (#11 hole 3): settings out of range (--epochs 0, --threads -3, train.clip -1, data.max_vocab -5 with
# data.round_len 0, values of the wrong type, an unknown key) are refused before any work, naming the key.
. "$REPO/scripts/sweep-lib.sh"
lines=()
i=0
while IFS='|' read -r args want; do
  i=$((i + 1))
  # shellcheck disable=SC2086
  limited 60 "s$i" $T --out "m$i.ckpt" $args
  lines+=("$(judge "s$i" "" "m$i.ckpt" "$want")")
done <<'CASES'
--epochs 0|train.epochs is 0
--threads -3|train.threads is -3
--set train.clip=-1 --set data.max_vocab=-5 --set data.round_len=0|data.round_len
--set train.lr=fast|train.lr
--set model.nope=1|model.nope
--set data.batch=1.5|data.batch
--set train.lr_decay=1.5|train.lr_decay
CASES
combine "${lines[@]}"
