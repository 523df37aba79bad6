package decoder

import (
	"fmt"

	"github.com/attend-nmt/attend/encoder"
	"github.com/attend-nmt/attend/kernels"
)

// The tests search a Decoder, or an ensemble of them, through these: GreedyQueue over blocks of Sessions that
// they start from encoder outputs, and Beam on Sessions.

// encBlock is a block of encoded sentences in the tests: the first member's encoder output of a batch (Enc),
// the other members' (Others), the rows' source lengths, the ids of the rows to decode and their shortlist,
// which ensemble.started turns into a Block of started Sessions.
type encBlock[T kernels.Float] struct {
	Enc       *encoder.Output[T]
	Others    []*encoder.Output[T]
	Lengths   []int
	IDs       []int
	Shortlist *Shortlist[T]
	Beam      *BeamOptions
}

// ensemble is decoders searched together; mean makes Beam rank by the mean of their log-probabilities even for
// one decoder (a Decoder's own searches rank by its logits).
type ensemble[T kernels.Float] struct {
	members []*Decoder[T]
	mean    bool
}

// newEnsemble is the ensemble of members, ranking by the mean of their log-probabilities.
func newEnsemble[T kernels.Float](members ...*Decoder[T]) *ensemble[T] {
	return &ensemble[T]{members: members, mean: true}
}

// single is the search of one decoder, which ranks by d's logits.
func (d *Decoder[T]) single() *ensemble[T] { return &ensemble[T]{members: []*Decoder[T]{d}} }

// started starts every member's Session of b's encoder outputs.
func (e *ensemble[T]) started(b *encBlock[T]) *Block[T] {
	encs := append([]*encoder.Output[T]{b.Enc}, b.Others...)
	e.checkEncs(len(encs))
	sessions := make([]Session[T], len(encs))
	for i, d := range e.members {
		sessions[i] = d.Session(encs[i], b.Lengths)
	}
	return &Block[T]{Sessions: sessions, SrcLen: b.Enc.SrcLen, Lengths: b.Lengths[:b.Enc.Rows], IDs: b.IDs, Shortlist: b.Shortlist, Beam: b.Beam}
}

// queue is GreedyQueue over the blocks that next returns, started (an empty block stays one).
func (e *ensemble[T]) queue(rows, threads int, products kernels.Products, next func() *encBlock[T], bos, eos, maxLen int, done func(int, Hypothesis)) {
	e.queueWith(rows, threads, next, GreedyOptions{Products: products, BOS: bos, EOS: eos, MaxLen: maxLen}, done, nil)
}

// startAll is next with each block started (an empty block stays one, nil ends the queue).
func (e *ensemble[T]) startAll(next func() *encBlock[T]) func() *Block[T] {
	return func() *Block[T] {
		b := next()
		switch {
		case b == nil:
			return nil
		case len(b.IDs) == 0:
			return &Block[T]{}
		}
		return e.started(b)
	}
}

// queueWith is queue with the options o (its Rows, Threads and Vocab set here) and, when bf16 is not nil, the
// output layer in bfloat16 that it gives.
func (e *ensemble[T]) queueWith(rows, threads int, next func() *encBlock[T], o GreedyOptions, done func(int, Hypothesis), bf16 func(*Decoder[T]) *bf16Output) {
	o.Rows, o.Threads, o.Vocab = rows, threads, e.members[0].Cfg.Vocab
	if bf16 == nil {
		bf16 = func(d *Decoder[T]) *bf16Output { return d.bf16For(o.Products) }
	}
	if err := greedyQueue(e.startAll(next), done, o, bf16); err != nil {
		panic(err)
	}
}

// queue is the ensemble of d alone's queue.
func (d *Decoder[T]) queue(rows, threads int, products kernels.Products, next func() *encBlock[T], bos, eos, maxLen int, done func(int, Hypothesis)) {
	d.single().queue(rows, threads, products, next, bos, eos, maxLen, done)
}

// Greedy decodes a batch by taking the most likely word at every step, starting from bos, until every row has
// produced eos or maxLen words. lengths are the real source lengths of the rows: Greedy on the decoder's
// Session of enc.
func (d *Decoder[T]) Greedy(enc *encoder.Output[T], lengths []int, bos, eos, maxLen int) []Hypothesis {
	return d.single().Greedy([]*encoder.Output[T]{enc}, lengths, bos, eos, maxLen)
}

// Beam decodes a batch with beam search (Beam on the decoder's Session of enc; lengths are the real source
// lengths of the rows) with the decoder's own float32 output layer.
func (d *Decoder[T]) Beam(enc *encoder.Output[T], lengths []int, bos, eos int, opts BeamOptions) ([][]Scored, error) {
	return d.BeamShortlist(enc, lengths, bos, eos, opts, nil)
}

// BeamShortlist is Beam where each sentence (row of enc) may use only the candidate words that short lists for
// it (nil: every word): the batch's logits are computed for the union of its sentences' candidates, and each
// sentence's log-probabilities are normalised over its own candidates (so its scores are those of a model that
// knows only those words).
func (d *Decoder[T]) BeamShortlist(enc *encoder.Output[T], lengths []int, bos, eos int, opts BeamOptions, short *Shortlist[T]) ([][]Scored, error) {
	return Beam([]Session[T]{d.Session(enc, lengths)}, lengths[:enc.Rows], enc.SrcLen, d.Cfg.Vocab, bos, eos, opts, Output[T]{Shortlist: short})
}

// Greedy is Decoder.Greedy with the ensemble: encs are the members' encoder outputs of the batch, in order.
func (e *ensemble[T]) Greedy(encs []*encoder.Output[T], lengths []int, bos, eos, maxLen int) []Hypothesis {
	b := e.started(&encBlock[T]{Enc: encs[0], Others: encs[1:], Lengths: lengths})
	hyps, err := Greedy(b.Sessions, b.Lengths, b.SrcLen, e.members[0].Cfg.Vocab, bos, eos, maxLen, nil)
	if err != nil {
		panic(err)
	}
	return hyps
}

// Beam is Decoder.Beam with the ensemble: encs are the members' encoder outputs of the batch, in order. A
// hypothesis' LogProb is the mean of the members' log-probabilities of it.
func (e *ensemble[T]) Beam(encs []*encoder.Output[T], lengths []int, bos, eos int, opts BeamOptions) ([][]Scored, error) {
	b := e.started(&encBlock[T]{Enc: encs[0], Others: encs[1:], Lengths: lengths})
	return beam(b.Sessions, e.mean, b.Lengths, b.SrcLen, e.members[0].Cfg.Vocab, bos, eos, opts, Output[T]{})
}

// beamQueue is BeamQueue over the blocks that next returns, started (an empty block stays one), in a batch of
// rows rows stepped by threads goroutines, with the ensemble's ranking.
func (e *ensemble[T]) beamQueue(rows, threads int, next func() *encBlock[T], bos, eos int, opts BeamOptions, done func(int, []Scored)) {
	if err := queue(e.startAll(next), done, GreedyOptions{Rows: rows, Threads: threads, Vocab: e.members[0].Cfg.Vocab, BOS: bos, EOS: eos}, &opts, e.mean,
		func(d *Decoder[T]) *bf16Output { return nil }); err != nil {
		panic(err)
	}
}

// checkEncs panics unless there is one encoder output per member: a caller's mistake.
func (e *ensemble[T]) checkEncs(n int) {
	if n != len(e.members) {
		panic(fmt.Sprintf("decoder: %d encoder outputs for an ensemble of %d decoders", n, len(e.members)))
	}
}
