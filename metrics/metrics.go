// Package metrics scores translations: corpus BLEU, chrF and exact match, and bootstrap estimates of how sure
// a score or a difference between two systems is (alignment error rate is in package align).
package metrics

import (
	"fmt"
	"math"
	"slices"
)

// bleuOrder is the highest n-gram order BLEU counts.
const bleuOrder = 4

// BLEU is corpus BLEU (Papineni et al. 2002) of hyps against refs (one reference per hypothesis, both
// already tokenized), as a 0-100 figure: the geometric mean of the clipped 1- to 4-gram precisions, pooled
// over the corpus, with uniform weights, times the brevity penalty BP = 1 if the total hypothesis length
// exceeds the total reference length and exp(1 - r/max(h, 1)) otherwise.
//
// BLEU is 0 if some order has no matching n-gram (there is no smoothing), in particular for an empty corpus
// or one whose hypotheses are all shorter than 4 tokens. It follows, step by step, the BLEU function of the
// PyTorch reference implementation that the speed and quality figures compare against (see docs/speed.md), so
// both give the same figure up to floating-point rounding of log and exp. BLEU panics if hyps and refs differ in length.
func BLEU(hyps, refs [][]string) float64 {
	sum := sumCounts("BLEU", hyps, refs, SentenceBLEUCounts)
	matches, totals, hypLen, refLen := sum.Matches, sum.Totals, sum.HypLen, sum.RefLen
	if slices.Min(matches[:]) == 0 {
		return 0
	}
	// Summed in order 1..4 and divided after, as the PyTorch reference does, so the rounding matches too.
	logPrecision := 0.0
	for order := range bleuOrder {
		logPrecision += math.Log(float64(matches[order]) / float64(totals[order]))
	}
	logPrecision /= bleuOrder
	brevity := 1.0
	if hypLen <= refLen {
		brevity = math.Exp(1 - float64(refLen)/float64(max(hypLen, 1)))
	}
	return 100 * brevity * math.Exp(logPrecision)
}

// ngramCounts counts the n-grams of the given order (at most bleuOrder) in tokens. The key holds the n-gram
// in its first order slots; the rest stay empty, which is unambiguous because one map holds one order.
func ngramCounts(tokens []string, order int) map[[bleuOrder]string]int {
	counts := make(map[[bleuOrder]string]int, len(tokens))
	for start := 0; start+order <= len(tokens); start++ {
		var gram [bleuOrder]string
		copy(gram[:], tokens[start:start+order])
		counts[gram]++
	}
	return counts
}

// ExactMatch is the fraction (0 to 1) of hypotheses equal to their reference token by token; it is 0 for
// an empty corpus. ExactMatch panics if hyps and refs differ in length.
func ExactMatch(hyps, refs [][]string) float64 {
	if len(hyps) != len(refs) {
		panic(fmt.Sprintf("metrics: ExactMatch of %d hypotheses against %d references", len(hyps), len(refs)))
	}
	if len(hyps) == 0 {
		return 0
	}
	equal := 0
	for i, hyp := range hyps {
		if slices.Equal(hyp, refs[i]) {
			equal++
		}
	}
	return float64(equal) / float64(len(hyps))
}
