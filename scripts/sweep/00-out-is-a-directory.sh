# 00 (#11 hole 3): --out that is a directory is refused before training, suggesting a file in it.
. "$REPO/scripts/sweep-lib.sh"
mkdir runs
limited 60 p $T --out runs
judge p "" "runs.metrics.jsonl" "--out runs is a directory" "runs/model.ckpt"
