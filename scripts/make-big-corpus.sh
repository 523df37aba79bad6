#!/usr/bin/env bash
# make-big-corpus.sh — a large parallel corpus for measuring attend's reading, vocabulary, lexicon and sharding
# on millions of pairs: the pairs of a given corpus repeated until there are PAIRS of them, every copy after the
# first with the words of each side in a new random order (so that copies are different sentences over the same
# vocabulary). The output is one TSV file, source<TAB>target; it ends in .gz to be compressed.
#
#   scripts/make-big-corpus.sh PAIRS OUT.tsv IN.tsv             # IN.tsv: source<TAB>target[<TAB>more columns]
#   scripts/make-big-corpus.sh PAIRS OUT.tsv IN.src IN.tgt      # two line-aligned files
#   SEED=7 scripts/make-big-corpus.sh 1000000 /tmp/big.tsv corpus.tsv
#
# The same PAIRS, input and SEED give the same file. Words are what white space separates; tokenizing is left to
# attend. Lines with an empty side are copied as they are.
set -euo pipefail
if [ $# -lt 3 ] || [ $# -gt 4 ]; then
  echo "usage: $0 PAIRS OUT.tsv IN.tsv | $0 PAIRS OUT.tsv IN.src IN.tgt" >&2
  exit 2
fi
pairs=$1 out=$2
case $pairs in ''|*[!0-9]*) echo "make-big-corpus: PAIRS must be a whole number, got '$pairs'" >&2; exit 2 ;; esac
for f in "${@:3}"; do
  [ -r "$f" ] || { echo "make-big-corpus: cannot read $f" >&2; exit 2; }
done
input() {
  if [ $# -eq 1 ]; then
    cut -f1,2 "$1"
  else
    paste "$1" "$2"
  fi
}
compress() {
  case $out in
    *.gz) gzip -c ;;
    *) cat ;;
  esac
}
# awk reads the input once into memory (a few hundred thousand pairs at most is the intended input) and writes
# PAIRS lines from it.
input "${@:3}" | LC_ALL=C awk -F'\t' -v want="$pairs" -v seed="${SEED:-1}" '
function shuffle(s,    n, w, i, j, t, r) {
  n = split(s, w, " ")
  for (i = n; i > 1; i--) {
    j = int(rand() * i) + 1
    t = w[i]; w[i] = w[j]; w[j] = t
  }
  r = w[1]
  for (i = 2; i <= n; i++) r = r " " w[i]
  return r
}
{ src[NR] = $1; tgt[NR] = $2 }
END {
  if (NR == 0) { print "make-big-corpus: the input has no lines" > "/dev/stderr"; exit 1 }
  srand(seed)
  for (k = 0; k < want; k++) {
    i = k % NR + 1
    if (k < NR) print src[i] "\t" tgt[i]
    else print shuffle(src[i]) "\t" shuffle(tgt[i])
  }
}' | compress >"$out"
