# 00 (#11 hole 3): translate with --batch 0, --max-len 0, a missing --input, and --output equal to --input is
# refused before any work; the input stays.
. "$REPO/scripts/sweep-lib.sh"
remember s.de
lines=()
i=0
while IFS='|' read -r args want; do
  i=$((i + 1))
  # shellcheck disable=SC2086
  limited 60 "t$i" "$ATTEND" translate --model base.ckpt $args
  lines+=("$(judge "t$i" "s.de" "" "$want")")
done <<'CASES'
--input s.de --batch 0|--batch is 0
--input s.de --max-len 0|--max-len is 0
--input missing.de|missing.de
--input s.de --output s.de|--output s.de is also --input
CASES
combine "${lines[@]}"
