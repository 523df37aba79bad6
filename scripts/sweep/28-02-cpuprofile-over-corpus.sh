# 28-02: T --cpuprofile s.de: a profile written over the training corpus is refused, and s.de stays.
. "$REPO/scripts/sweep-lib.sh"
remember s.de s.en
limited 60 p $T --out m.ckpt --cpuprofile s.de
judge p "s.de s.en" "m.ckpt m.metrics.jsonl" "--cpuprofile s.de" "--src s.de"
