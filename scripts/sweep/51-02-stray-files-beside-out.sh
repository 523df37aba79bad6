# 51-02: files beside --out that attend never wrote (notes at NAME.align with train.guided_alignment auto, at the metrics log, at the best checkpoint) are refused before any work and stay as they were; the run's own NAME.align is replaced by a run that replaces the checkpoint (--overwrite).
. "$REPO/scripts/sweep-lib.sh"
echo notes >ua.align
echo notes >ub.metrics.jsonl
echo notes >uc.best.ckpt
remember ua.align ub.metrics.jsonl uc.best.ckpt
limited 60 align $T --set train.guided_alignment=auto --out ua.ckpt
a=$(judge align "ua.align" "ua.ckpt" "ua.align" "not a file of links attend wrote")
limited 60 metrics $T --out ub.ckpt
b=$(judge metrics "ub.metrics.jsonl" "ub.ckpt" "ub.metrics.jsonl" "not a metrics log")
limited 60 best $T --valid-src va.de --valid-tgt va.en --out uc.ckpt
c=$(judge best "uc.best.ckpt" "uc.ckpt" "uc.best.ckpt" "not an attend checkpoint")
limited 120 own $T --set train.guided_alignment=auto --out ud.ckpt
if [ "$RC" -eq 0 ]; then
  limited 120 own2 $T --set train.guided_alignment=auto --out ud.ckpt --overwrite
  if crashed own2; then
    d="panic $(first own2)"
  elif [ "$RC" -eq 0 ]; then
    d="ok the run's own ud.align is replaced with --overwrite"
  else
    d="wrong the run's own ud.align is refused: $(first own2)"
  fi
else
  d="wrong the first guided run failed: $(first own)"
fi
combine "$a" "$b" "$c" "$d"
