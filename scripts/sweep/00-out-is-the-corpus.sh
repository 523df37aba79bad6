# 00 (#11 hole 3): --out equal to --src (or --tgt by another spelling) is refused; the corpus stays.
. "$REPO/scripts/sweep-lib.sh"
remember s.de s.en
limited 60 a $T --out s.de
ra=$(judge a "s.de s.en" "" "--out s.de" "is also --src")
mkdir sub
limited 60 b $T --out sub/../s.en
rb=$(judge b "s.de s.en" "" "is also --tgt")
combine "$ra" "$rb"
