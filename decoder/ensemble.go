package decoder

import "github.com/attend-nmt/attend/kernels"

// MeanLogProbs writes into mean (len(logits[0]) values) the mean over the members of each word's
// log-probability, logits[m] being member m's logits of one row: each member's logits minus their log-sum-exp,
// in float64, summed, then divided by the number of members (so one member gives exactly its own
// log-probabilities, x − lse). exps is scratch as long as a row.
//
// It is how the searches rank words for an ensemble, models over one target vocabulary searched together as one
// model (one Session per member), as OpenNMT-py's and Marian's ensembles are: the plain mean, not renormalised,
// so that a hypothesis' LogProb is comparable with a single model's and an ensemble of one model scores exactly
// as that model. (Marian sums the members' scores with weights, 1 by default: with equal weights that ranks
// hypotheses the same, with scores as many times larger as there are members, which the length penalty's
// --alpha would then weigh differently.) The members may differ in anything but the target vocabulary. The
// attention a hypothesis keeps is the first member's, as Marian takes alignments from one model. An ensemble
// does not score with a shortlist nor with bfloat16 products: both compare logits of a few words of one model,
// where the mean needs every member's log-sum-exp over the whole vocabulary.
func MeanLogProbs[T kernels.Float](mean []float64, logits [][]T, exps []T) {
	clear(mean)
	for _, row := range logits {
		lse := kernels.LogSumExp(row, exps)
		for i, x := range row {
			mean[i] += float64(x) - lse
		}
	}
	n := float64(len(logits))
	for i := range mean {
		mean[i] /= n
	}
}
