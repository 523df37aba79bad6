package model

import (
	"errors"
	"fmt"
	"strings"

	"github.com/attend-nmt/attend/data"
	"github.com/attend-nmt/attend/decoder"
	"github.com/attend-nmt/attend/encoder"
	"github.com/attend-nmt/attend/kernels"
)

// SameText reports, as an error naming what differs, whether two checkpoints read or write text differently:
// in their source or target vocabularies, their subword merges, or the data settings that turn a line of text
// into their tokens (data.lowercase, and data.subword, which decides whether the "@@" markers of text split
// beforehand are kept). Models that agree on all of these can be ensembled (NewEnsemble), whatever their
// architectures and types.
func SameText(a, b *Checkpoint) error {
	var differ []string
	for _, c := range Diff(a.Config, b.Config) {
		if c.Key == "data.lowercase" || c.Key == "data.subword" {
			differ = append(differ, c.String())
		}
	}
	if err := sameVocabularies(a.Model, b.Model); err != nil {
		differ = append(differ, err.Error())
	}
	if len(differ) > 0 {
		return errors.New(strings.Join(differ, "; "))
	}
	return nil
}

// Ensemble is models that read and write the same text (SameText), translated together: at every step each
// model scores the next word from its own state (its decoder.Session), and the search ranks words by the mean of
// their log-probabilities (decoder.Greedy, decoder.Beam). The models may be of different types. Its first
// model's vocabularies, subword merges, tokenizer settings and lexicon are the ensemble's, and its attention is
// the translations'. An Ensemble of one model searches as that model's own decoder does (with bfloat16 products
// and shortlists where asked for).
type Ensemble struct {
	Models []*Seq2Seq[float32]
	queue  *decoder.Ensemble[float32] // the members' decoders, when every member can refill rows (queuer); nil otherwise
}

// NewEnsemble returns the ensemble of the checkpoints cks, loaded from paths, in that order. Each must read and
// write the same text as the first (SameText): the error names the two checkpoints and what differs.
func NewEnsemble(paths []string, cks []*Checkpoint) (*Ensemble, error) {
	if len(cks) == 0 || len(paths) != len(cks) {
		return nil, fmt.Errorf("ensemble: %d checkpoints and %d paths; want at least one of each, as many", len(cks), len(paths))
	}
	models := make([]*Seq2Seq[float32], len(cks))
	for i, ck := range cks {
		if err := SameText(cks[0], ck); err != nil {
			return nil, fmt.Errorf("ensemble: %s and %s read or write different text, and an ensemble averages the models' "+
				"log-probabilities of the same target tokens after the same source tokens: %w", paths[0], paths[i], err)
		}
		models[i] = ck.Model
	}
	return newEnsemble(models)
}

// Single is the ensemble of m alone, whose searches are m's own.
func Single(m *Seq2Seq[float32]) *Ensemble {
	e, err := newEnsemble([]*Seq2Seq[float32]{m})
	if err != nil {
		panic(err) // one model has one vocabulary
	}
	return e
}

// newEnsemble is the ensemble of models, whose greedy searches refill rows (Queues) when every model can.
func newEnsemble(models []*Seq2Seq[float32]) (*Ensemble, error) {
	e := &Ensemble{Models: models}
	decs := make([]*decoder.Decoder[float32], len(models))
	for i, m := range models {
		q, ok := m.net.(queuer[float32])
		if !ok {
			return e, nil
		}
		decs[i] = q.decoder()
	}
	if len(decs) == 1 {
		e.queue = decs[0].Ensemble()
		return e, nil
	}
	var err error
	e.queue, err = decoder.NewEnsemble(decs...)
	return e, err
}

// Queues reports whether the ensemble's greedy search can keep its batch full across batches (GreedyQueue): when
// every model's rows can be at different positions (recurrent models).
func (e *Ensemble) Queues() bool { return e.queue != nil }

// Block encodes a batch with every model's encoder: a block of the batch's rows for GreedyQueue, its IDs left
// to the caller. It panics unless the ensemble Queues.
func (e *Ensemble) Block(b *data.Batch) *decoder.Block[float32] {
	encs := make([]*encoder.Output[float32], len(e.Models))
	for i, m := range e.Models {
		encs[i] = m.net.(queuer[float32]).encode(b)
	}
	return &decoder.Block[float32]{Enc: encs[0], Others: encs[1:], Lengths: b.SrcLengths}
}

// GreedyQueue decodes the blocks that next returns (made by Block) greedily from <s> to </s>, as
// decoder.Decoder.GreedyQueue does, on products. It panics unless the ensemble Queues.
func (e *Ensemble) GreedyQueue(rows, threads int, products kernels.Products, next func() *decoder.Block[float32], maxLen int, done func(id int, h decoder.Hypothesis)) {
	e.queue.GreedyQueue(rows, threads, products, next, data.BOSID, data.EOSID, maxLen, done)
}

// sessions encodes a batch with every model and starts their decoding of it.
func (e *Ensemble) sessions(b *data.Batch) []decoder.Session[float32] {
	s := make([]decoder.Session[float32], len(e.Models))
	for i, m := range e.Models {
		s[i] = m.Session(b)
	}
	return s
}

// Greedy decodes a batch greedily from <s> to </s>, at most maxLen words, a batch at a time (decoder.Greedy):
// the hypotheses of its b.Real real rows. A closed stop stops it before its next step, with decoder.ErrStopped.
func (e *Ensemble) Greedy(b *data.Batch, maxLen int, stop <-chan struct{}) ([]decoder.Hypothesis, error) {
	hyps, err := decoder.Greedy(e.sessions(b), b.SrcLengths[:b.Rows], b.SrcLen, e.Models[0].TgtVocab.Size(), data.BOSID, data.EOSID, maxLen, stop)
	if err != nil {
		return nil, err
	}
	return hyps[:b.Real], nil
}

// Beam decodes a batch with beam search (decoder.Beam), its output layer computed as out says: a shortlist needs
// one model whose output layer it can cut (CanShortlist).
func (e *Ensemble) Beam(b *data.Batch, opts decoder.BeamOptions, out decoder.Output[float32]) ([][]decoder.Scored, error) {
	lists, err := decoder.Beam(e.sessions(b), b.SrcLengths[:b.Rows], b.SrcLen, e.Models[0].TgtVocab.Size(), data.BOSID, data.EOSID, opts, out)
	if err != nil {
		return nil, fmt.Errorf("ensemble: %w", err)
	}
	return lists, nil
}

// OutputRows returns the rows of the model's output layer that shortlists of its words are scored with
// (decoder.Shortlist), or nil when its output layer cannot be cut to a shortlist (a Transformer's, as yet).
func (m *Seq2Seq[T]) OutputRows() *decoder.OutputRows[T] {
	if s, ok := m.net.(shortlister[T]); ok {
		return s.outputRows()
	}
	return nil
}

// CanShortlist reports whether the model's output layer can be cut to a shortlist of words (OutputRows).
func (m *Seq2Seq[T]) CanShortlist() bool {
	_, ok := m.net.(shortlister[T])
	return ok
}
