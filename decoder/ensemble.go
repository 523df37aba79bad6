package decoder

import (
	"fmt"

	"github.com/attend-nmt/attend/kernels"
)

// Ensemble is decoders over one target vocabulary searched together as one model, as OpenNMT-py's and Marian's
// ensembles are: at every step each member advances its own state from the same previous word (and, in beam
// search, each reorders its own state with the beams) and scores the whole vocabulary, and words are ranked by
// the mean of the members' log-probabilities. Like OpenNMT-py, it takes the plain mean, not renormalised:
// a hypothesis' LogProb is the mean over the members of their log-probabilities of it, so it is comparable
// with a single model's, and an ensemble of one model scores exactly as that model. (Marian sums the members'
// scores with weights, 1 by default: with equal weights that ranks hypotheses the same, with scores as many
// times larger as there are members, which the length penalty's --alpha would then weigh differently.)
//
// The members may differ in anything but the target vocabulary — widths, attention function, layers, input
// feeding — and each reads its own encoder's output of the same sentences. The attention a hypothesis keeps
// (for --attention, alignments, <unk> replacement and the coverage penalty) is the first member's, as Marian
// takes alignments from one model: it is what that model looked at while the ensemble chose the words, and
// stays one model's attention, whose heads a teacher-forced pass of that model reproduces.
//
// An Ensemble does not score with a shortlist nor with bfloat16 products: both compare logits of a few
// words of one model, where the mean needs every member's log-sum-exp over the whole vocabulary.
type Ensemble[T kernels.Float] struct {
	members []*Decoder[T]
	// mean ranks by the mean of the members' log-probabilities. It is false only for a Decoder's own searches,
	// which go through an Ensemble of that one decoder and rank by its logits: the same order, without the
	// log-sum-exp, and with the shortlist and the bfloat16 output layer, which rank logits.
	mean bool
}

// NewEnsemble returns the ensemble of members, whose target vocabularies must be the same size (that they are
// the same words is the caller's to check); there must be at least one.
func NewEnsemble[T kernels.Float](members ...*Decoder[T]) (*Ensemble[T], error) {
	if len(members) == 0 {
		return nil, fmt.Errorf("decoder: an ensemble of no decoders")
	}
	for i, d := range members[1:] {
		if v := members[0].Cfg.Vocab; d.Cfg.Vocab != v {
			return nil, fmt.Errorf("decoder: ensemble member %d has a target vocabulary of %d words, member 1 of %d", i+2, d.Cfg.Vocab, v)
		}
	}
	return &Ensemble[T]{members: members, mean: true}, nil
}

// single is the search of one decoder: an Ensemble of d alone that ranks by d's logits.
func (d *Decoder[T]) single() *Ensemble[T] { return &Ensemble[T]{members: []*Decoder[T]{d}} }

// MeanLogProbs writes into mean (len(logits[0]) values) the mean over the members of each word's
// log-probability, logits[m] being member m's logits of one row: each member's logits minus their log-sum-exp,
// in float64, summed, then divided by the number of members (so one member gives exactly its own
// log-probabilities, x − lse). exps is scratch as long as a row.
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

// Ensemble is the search of d alone as an Ensemble, which ranks by d's logits (GreedyQueue and Beam as d's own).
func (d *Decoder[T]) Ensemble() *Ensemble[T] { return d.single() }
