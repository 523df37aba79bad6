package decoder

import (
	"fmt"
	"github.com/attend-nmt/attend/encoder"
	"github.com/attend-nmt/attend/kernels"
)

// The tests search a Decoder, or an Ensemble, through these: the greedy queue over one block, and Beam on
// Sessions.

// Greedy decodes a batch by taking the most likely word at every step, starting from bos, until every row has
// produced eos or maxLen words. lengths are the real source lengths of the rows. Finished rows leave the batch,
// so the work of a step shrinks with the number of sentences still being decoded. It is GreedyQueue over one
// block.
func (d *Decoder[T]) Greedy(enc *encoder.Output[T], lengths []int, bos, eos, maxLen int) []Hypothesis {
	return d.single().greedy(&Block[T]{Enc: enc, Lengths: lengths}, kernels.Products{}, bos, eos, maxLen)
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
func (e *Ensemble[T]) Greedy(encs []*encoder.Output[T], lengths []int, bos, eos, maxLen int) []Hypothesis {
	e.checkEncs(len(encs))
	return e.greedy(&Block[T]{Enc: encs[0], Others: encs[1:], Lengths: lengths}, kernels.Products{}, bos, eos, maxLen)
}

// Beam is Decoder.Beam with the ensemble: encs are the members' encoder outputs of the batch, in order. A
// hypothesis' LogProb is the mean of the members' log-probabilities of it.
func (e *Ensemble[T]) Beam(encs []*encoder.Output[T], lengths []int, bos, eos int, opts BeamOptions) ([][]Scored, error) {
	e.checkEncs(len(encs))
	sessions := make([]Session[T], len(encs))
	for i, d := range e.members {
		sessions[i] = d.Session(encs[i], lengths)
	}
	return beam(sessions, e.mean, lengths[:encs[0].Rows], encs[0].SrcLen, e.members[0].Cfg.Vocab, bos, eos, opts, Output[T]{})
}

// greedy decodes block, all of whose rows are sentences (its IDs are set here), as Greedy, on products.
func (e *Ensemble[T]) greedy(block *Block[T], products kernels.Products, bos, eos, maxLen int) []Hypothesis {
	rows := block.Enc.Rows
	hyps := make([]Hypothesis, rows)
	block.IDs = make([]int, rows)
	for r := range block.IDs {
		block.IDs[r] = r
	}
	e.GreedyQueue(rows, 1, products, func() *Block[T] {
		b := block
		block = nil
		return b
	}, bos, eos, maxLen, func(id int, h Hypothesis) { hyps[id] = h })
	return hyps
}

// checkEncs panics unless there is one encoder output per member: a caller's mistake.
func (e *Ensemble[T]) checkEncs(n int) {
	if n != len(e.members) {
		panic(fmt.Sprintf("decoder: %d encoder outputs for an ensemble of %d decoders", n, len(e.members)))
	}
}
