package decoder

import (
	"fmt"
	"slices"

	"github.com/attend-nmt/attend/kernels"
)

// BeamSelection is Beam's choice of hypotheses, step by step, for a model whose steps are computed outside this
// package (the Transformer's): the same ranking of each sentence's extensions by log-probability, the same
// length and coverage penalties, n-best lists, early stops and length limits as Beam, in the same code, so that
// both searches keep the same hypotheses from the same logits and attention.
//
// It ranks one model's logits, or an ensemble's: several members' logits of the same rows, ranked by the mean of
// their log-probabilities as Ensemble.Beam ranks them.
//
// Its rows are Beam's: one per sentence at the first step, then Width per sentence still searched, rows j·Width
// … j·Width+Width-1 being the beams of the j-th of them. A search loops while Rows() > 0: the model decodes
// Rows() rows from their previous words Prev() into logits and attention weights, Choose ranks their extensions
// and picks the next step's rows, and the model makes its new row r continue its row From()[r]. Best then gives
// the n-best lists.
type BeamSelection[T kernels.Float] struct {
	b             *beamState[T]
	members       int // logits slices Choose takes: 1, or an ensemble's members
	vocab, sents  int
	rows, t       int   // rows of the next step; steps taken
	from          []int // the old row of each new row
	spreadLogits  int   // the length logits must have at the first step, Width rows per sentence
	spreadWeights int   // the same for weights
}

// NewBeamSelection starts the beam search of len(lengths) sentences with those source lengths, padded to srcLen
// source positions, over a target vocabulary of vocab words, from bos to eos. It reports options out of range.
//
// meanOf says how Choose ranks words: 0 by one model's logits, as Beam does for one decoder; n ≥ 1 by the mean
// of n members' log-probabilities (MeanLogProbs), as Ensemble.Beam does, so that a hypothesis' LogProb is the
// mean of the members' log-probabilities of it (with 1, exactly that one model's, as with 0).
func NewBeamSelection[T kernels.Float](lengths []int, srcLen, vocab, bos, eos int, opts BeamOptions, meanOf int) (*BeamSelection[T], error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	if meanOf < 0 {
		return nil, fmt.Errorf("decoder: a beam selection ranking the mean of %d members", meanOf)
	}
	sents, k := len(lengths), opts.Width
	for _, l := range lengths {
		if l > srcLen {
			return nil, fmt.Errorf("decoder: a source length of %d in a batch padded to %d positions", l, srcLen)
		}
	}
	return &BeamSelection[T]{b: newBeamState[T](vocab, meanOf, sents*k, srcLen, slices.Clone(lengths), bos, eos, opts),
		members: max(meanOf, 1), vocab: vocab, sents: sents, rows: sents, from: make([]int, sents*k),
		spreadLogits: sents * k * vocab, spreadWeights: sents * k * srcLen}, nil
}

// Rows is the number of rows the next step decodes: one per sentence at the first step, then Width per sentence
// still searched; 0 when the search is over.
func (s *BeamSelection[T]) Rows() int { return s.rows }

// Prev is the previous word of each of the next step's rows (bos at the first step), Rows() of them. Choose
// changes it.
func (s *BeamSelection[T]) Prev() []int { return s.b.prev[:s.rows] }

// Choose takes the step's logits, one slice per member (one for a model alone; each Rows() rows of vocab values),
// and the attention weights the hypotheses keep (Rows() rows of srcLen values, each row's weights past its source
// length unread), ranks every sentence's extensions, sets aside the finished hypotheses and picks the next step's
// rows; it reports whether there is a next step. The buffers must have room for Width rows per sentence: the
// first step's rows are spread in place to their sentences' first beams, j·Width.
func (s *BeamSelection[T]) Choose(logits [][]T, weights []T) bool {
	k := s.b.k
	if s.rows == 0 {
		panic("decoder: BeamSelection.Choose after the search ended")
	}
	if len(logits) != s.members {
		panic(fmt.Sprintf("decoder: BeamSelection.Choose got the logits of %d members; it ranks %d", len(logits), s.members))
	}
	if s.t == 0 {
		for _, l := range logits {
			if len(l) < s.spreadLogits {
				panic(fmt.Sprintf("decoder: BeamSelection's first step got %d logits; it needs room for %d", len(l), s.spreadLogits))
			}
		}
		if len(weights) < s.spreadWeights {
			panic(fmt.Sprintf("decoder: BeamSelection's first step got %d weights; it needs room for %d", len(weights), s.spreadWeights))
		}
		for _, l := range logits {
			spreadRows(l, s.vocab, s.sents, k)
		}
		spreadRows(weights, s.b.srcLen, s.sents, k)
	}
	s.b.weights = weights
	n := s.b.chooseAll(s.t, logits, s.vocab, nil, nil) * k
	for r, f := range s.b.from[:n] {
		if s.t == 0 { // the first step's row of the sentence of row j·k is j
			f /= k
		}
		s.from[r] = f
	}
	s.b.advance(n)
	s.rows = n
	s.t++
	return n > 0
}

// From is, after Choose, the row of the step just taken that each of the next step's rows continues, Rows() of
// them.
func (s *BeamSelection[T]) From() []int { return s.from[:s.rows] }

// Best returns each sentence's finished hypotheses sorted by Score, best first, at most NBest of them (1 when
// NBest is 0), as Beam does. Call it once the search is over.
func (s *BeamSelection[T]) Best() [][]Scored { return s.b.best(max(s.b.opts.NBest, 1)) }
