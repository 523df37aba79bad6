package transformer

import (
	"fmt"
	"slices"

	"github.com/attend-nmt/attend/kernels"
)

// Ensemble is Transformers over one target vocabulary searched together as one model, as decoder.Ensemble
// searches recurrent decoders: at every step each member advances its own State from the same previous words (and,
// in beam search, reorders it with the beams) and scores the whole vocabulary, and words are ranked by the plain
// mean of the members' log-probabilities (decoder.MeanLogProbs), so that a hypothesis' LogProb is the mean of the
// members' log-probabilities of it and an ensemble of one model scores exactly as that model. The attention a
// hypothesis keeps is the first member's, which a teacher-forced pass of that model reproduces.
//
// The members may differ in anything but the target vocabulary (widths, heads, blocks); each reads its own
// encoder's Memory of the same sentences.
type Ensemble[T kernels.Float] struct {
	members []*Model[T]
	// mean ranks by the mean of the members' log-probabilities. It is false only for a Model's own searches,
	// which go through an Ensemble of that one model and rank by its logits: the same order, without the
	// log-sum-exp.
	mean bool
}

// NewEnsemble returns the ensemble of members, whose target vocabularies must be the same size (that they are the
// same words is the caller's to check); there must be at least one.
func NewEnsemble[T kernels.Float](members ...*Model[T]) (*Ensemble[T], error) {
	if len(members) == 0 {
		return nil, fmt.Errorf("transformer: an ensemble of no models")
	}
	for i, m := range members[1:] {
		if v := members[0].Cfg.TgtVocab; m.Cfg.TgtVocab != v {
			return nil, fmt.Errorf("transformer: ensemble member %d has a target vocabulary of %d words, member 1 of %d", i+2, m.Cfg.TgtVocab, v)
		}
	}
	return &Ensemble[T]{members: members, mean: true}, nil
}

// single is the search of one model: an Ensemble of m alone that ranks by m's logits.
func (m *Model[T]) single() *Ensemble[T] { return &Ensemble[T]{members: []*Model[T]{m}} }

// checkMems panics unless mems are one memory per member of the same sentences (rows, padded length and source
// lengths): a caller's mistake.
func (e *Ensemble[T]) checkMems(mems []*Memory[T]) {
	if len(mems) != len(e.members) {
		panic(fmt.Sprintf("transformer: %d memories for an ensemble of %d models", len(mems), len(e.members)))
	}
	for i, mem := range mems[1:] {
		if first := mems[0]; mem.Rows != first.Rows || mem.SrcLen != first.SrcLen || !slices.Equal(mem.Lengths[:mem.Rows], first.Lengths[:first.Rows]) {
			panic(fmt.Sprintf("transformer: ensemble member %d's memory is of other sentences than member 1's", i+2))
		}
	}
}

// ensembleStep is the members' states and outputs of one search step: each member's State, its logits, and
// attention weights, of which the first member's are the ones kept.
type ensembleStep[T kernels.Float] struct {
	e       *Ensemble[T]
	states  []*State[T]
	logits  [][]T
	weights [][]T
}

// start starts every member's State on its memory, with room for rows rows of logits and weights.
func (e *Ensemble[T]) start(mems []*Memory[T], rows int) *ensembleStep[T] {
	s := &ensembleStep[T]{e: e}
	for i, m := range e.members {
		s.states = append(s.states, m.Start(mems[i]))
		s.logits = append(s.logits, make([]T, rows*m.Cfg.TgtVocab))
		s.weights = append(s.weights, make([]T, rows*mems[i].SrcLen))
	}
	return s
}

// step advances every member's State by the previous words prev, one per row, into its logits and weights.
func (s *ensembleStep[T]) step(prev []int) {
	n := len(prev)
	for i, m := range s.e.members {
		m.Step(s.states[i], prev, s.logits[i][:n*m.Cfg.TgtVocab], s.weights[i][:n*s.states[i].mem.SrcLen])
	}
}

// reorder makes every member's new row r continue its old row from[r].
func (s *ensembleStep[T]) reorder(from []int) {
	for _, st := range s.states {
		st.Reorder(from)
	}
}
