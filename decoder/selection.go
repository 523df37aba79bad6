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
// Its rows are Beam's: one per sentence at the first step, then Width per sentence still searched, rows j·Width
// … j·Width+Width-1 being the beams of the j-th of them. A search loops while Rows() > 0: the model decodes
// Rows() rows from their previous words Prev() into logits and attention weights, Choose ranks their extensions
// and picks the next step's rows, and the model makes its new row r continue its row From()[r]. Best then gives
// the n-best lists.
type BeamSelection[T kernels.Float] struct {
	b             *beamState[T]
	logits        [][]T // the model's logits of the step, as candidates takes them
	vocab, sents  int
	rows, t       int   // rows of the next step; steps taken
	from          []int // the old row of each new row
	spreadLogits  int   // the length logits must have at the first step, Width rows per sentence
	spreadWeights int   // the same for weights
}

// NewBeamSelection starts the beam search of len(lengths) sentences with those source lengths, padded to srcLen
// source positions, over a target vocabulary of vocab words, from bos to eos. It reports options out of range.
func NewBeamSelection[T kernels.Float](lengths []int, srcLen, vocab, bos, eos int, opts BeamOptions) (*BeamSelection[T], error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	sents, k := len(lengths), opts.Width
	for _, l := range lengths {
		if l > srcLen {
			return nil, fmt.Errorf("decoder: a source length of %d in a batch padded to %d positions", l, srcLen)
		}
	}
	return &BeamSelection[T]{b: newBeamState[T](vocab, 0, sents*k, srcLen, slices.Clone(lengths), bos, eos, opts),
		logits: make([][]T, 1), vocab: vocab, sents: sents, rows: sents, from: make([]int, sents*k),
		spreadLogits: sents * k * vocab, spreadWeights: sents * k * srcLen}, nil
}

// Rows is the number of rows the next step decodes: one per sentence at the first step, then Width per sentence
// still searched; 0 when the search is over.
func (s *BeamSelection[T]) Rows() int { return s.rows }

// Prev is the previous word of each of the next step's rows (bos at the first step), Rows() of them. Choose
// changes it.
func (s *BeamSelection[T]) Prev() []int { return s.b.prev[:s.rows] }

// Choose takes the step's logits (Rows() rows of vocab values) and attention weights (Rows() rows of srcLen
// values, each row's weights past its source length unread), ranks every sentence's extensions, sets aside the
// finished hypotheses and picks the next step's rows; it reports whether there is a next step. Both buffers must
// have room for Width rows per sentence: the first step's rows are spread in place to their sentences' first
// beams, j·Width.
func (s *BeamSelection[T]) Choose(logits, weights []T) bool {
	k := s.b.k
	if s.rows == 0 {
		panic("decoder: BeamSelection.Choose after the search ended")
	}
	if s.t == 0 {
		if len(logits) < s.spreadLogits || len(weights) < s.spreadWeights {
			panic(fmt.Sprintf("decoder: BeamSelection's first step got %d logits and %d weights; it needs room for %d and %d",
				len(logits), len(weights), s.spreadLogits, s.spreadWeights))
		}
		spreadRows(logits, s.vocab, s.sents, k)
		spreadRows(weights, s.b.srcLen, s.sents, k)
	}
	s.b.weights = weights
	s.logits[0] = logits
	n := s.b.chooseAll(s.t, s.logits, s.vocab, nil, nil) * k
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
