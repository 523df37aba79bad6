package model

import (
	"errors"
	"fmt"
	"strings"

	"github.com/attend-nmt/attend/data"
	"github.com/attend-nmt/attend/decoder"
	"github.com/attend-nmt/attend/encoder"
	"github.com/attend-nmt/attend/transformer"
)

// SameText reports, as an error naming what differs, whether two checkpoints read or write text differently:
// in their source or target vocabularies, their subword merges, or the data settings that turn a line of text
// into their tokens (data.lowercase, and data.subword, which decides whether the "@@" markers of text split
// beforehand are kept). Models that agree on all of these can be ensembled (NewEnsemble), whatever their
// architectures, so long as they are all recurrent or all Transformers.
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
// model scores the next word from its own state, and the search ranks words by the mean of their
// log-probabilities (decoder.Ensemble for recurrent models, transformer.Ensemble for Transformers: the members
// are all of one kind). Its first model's vocabularies, subword merges, tokenizer settings and lexicon are the
// ensemble's, and its attention is the translations'. An Ensemble of one model searches as that model's own
// decoder does (with bfloat16 products and shortlists where asked for).
type Ensemble struct {
	Models []*Seq2Seq[float32]
	dec    *decoder.Ensemble[float32]     // several recurrent models; nil otherwise
	tf     *transformer.Ensemble[float32] // several Transformers; nil otherwise
}

// NewEnsemble returns the ensemble of the checkpoints cks, loaded from paths, in that order. Each must read and
// write the same text as the first (SameText): the error names the two checkpoints and what differs.
func NewEnsemble(paths []string, cks []*Checkpoint) (*Ensemble, error) {
	if len(cks) == 0 || len(paths) != len(cks) {
		return nil, fmt.Errorf("ensemble: %d checkpoints and %d paths; want at least one of each, as many", len(cks), len(paths))
	}
	e := &Ensemble{}
	var decs []*decoder.Decoder[float32]
	for i, ck := range cks {
		if err := SameText(cks[0], ck); err != nil {
			return nil, fmt.Errorf("ensemble: %s and %s read or write different text, and an ensemble averages the models' "+
				"log-probabilities of the same target tokens after the same source tokens: %w", paths[0], paths[i], err)
		}
		if first, tf := cks[0].Model.Transformer != nil, ck.Model.Transformer != nil; first != tf {
			kind := func(tf bool) string {
				if tf {
					return "a Transformer (model.type transformer)"
				}
				return "a recurrent model"
			}
			return nil, fmt.Errorf("ensemble: %s is %s and %s %s, and an ensemble's models must all be recurrent or all Transformers",
				paths[0], kind(first), paths[i], kind(tf))
		}
		e.Models = append(e.Models, ck.Model)
		decs = append(decs, ck.Model.Decoder)
	}
	if len(cks) > 1 && cks[0].Model.Transformer != nil {
		tfs := make([]*transformer.Model[float32], len(cks))
		for i, ck := range cks {
			tfs[i] = ck.Model.Transformer
		}
		tf, err := transformer.NewEnsemble(tfs...)
		if err != nil {
			return nil, err
		}
		e.tf = tf
	} else if len(decs) > 1 {
		dec, err := decoder.NewEnsemble(decs...)
		if err != nil {
			return nil, err
		}
		e.dec = dec
	}
	return e, nil
}

// Single is the ensemble of m alone, whose searches are m's own.
func Single(m *Seq2Seq[float32]) *Ensemble { return &Ensemble{Models: []*Seq2Seq[float32]{m}} }

// Block encodes a batch with every model's encoder: a block of the batch's rows for GreedyQueue, its IDs left
// to the caller.
func (e *Ensemble) Block(b *data.Batch) *decoder.Block[float32] {
	encs := e.encode(b)
	return &decoder.Block[float32]{Enc: encs[0], Others: encs[1:], Lengths: b.SrcLengths}
}

// encode runs every model's encoder over a batch.
func (e *Ensemble) encode(b *data.Batch) []*encoder.Output[float32] {
	encs := make([]*encoder.Output[float32], len(e.Models))
	for i, m := range e.Models {
		encs[i] = m.Encode(b)
	}
	return encs
}

// GreedyQueue decodes the blocks that next returns (made by Block) greedily from <s> to </s>, as
// decoder.Decoder.GreedyQueue does.
func (e *Ensemble) GreedyQueue(rows, threads int, next func() *decoder.Block[float32], maxLen int, done func(id int, h decoder.Hypothesis)) {
	if e.dec == nil {
		e.Models[0].Decoder.GreedyQueue(rows, threads, next, data.BOSID, data.EOSID, maxLen, done)
		return
	}
	e.dec.GreedyQueue(rows, threads, next, data.BOSID, data.EOSID, maxLen, done)
}

// memories runs every Transformer's encoder over a batch.
func (e *Ensemble) memories(b *data.Batch) []*transformer.Memory[float32] {
	mems := make([]*transformer.Memory[float32], len(e.Models))
	for i, m := range e.Models {
		mems[i] = m.EncodeTransformer(b)
	}
	return mems
}

// Greedy decodes a batch greedily from <s> to </s>, at most maxLen words, as Seq2Seq.Greedy does, a batch at a
// time: the hypotheses of its b.Real real rows. It is how a Transformer or an ensemble of Transformers
// translates greedily (recurrent models keep rows busy across batches with GreedyQueue).
func (e *Ensemble) Greedy(b *data.Batch, maxLen int) []decoder.Hypothesis {
	switch {
	case e.tf != nil:
		return e.tf.Greedy(e.memories(b), data.BOSID, data.EOSID, maxLen)[:b.Real]
	case e.dec != nil:
		return e.dec.Greedy(e.encode(b), b.SrcLengths, data.BOSID, data.EOSID, maxLen)[:b.Real]
	}
	return e.Models[0].Greedy(b, maxLen)
}

// Beam decodes a batch with beam search, as decoder.Decoder.BeamShortlist does; short must be nil for an
// ensemble of several models.
func (e *Ensemble) Beam(b *data.Batch, opts decoder.BeamOptions, short *decoder.Shortlist[float32]) ([][]decoder.Scored, error) {
	if e.tf != nil {
		if short != nil {
			return nil, fmt.Errorf("ensemble: a shortlist with %d models", len(e.Models))
		}
		return e.tf.Beam(e.memories(b), data.BOSID, data.EOSID, opts)
	}
	if m := e.Models[0]; e.dec == nil && m.Transformer != nil {
		if short != nil {
			return nil, errors.New("ensemble: a shortlist with a Transformer, which has none yet")
		}
		return m.Transformer.Beam(m.EncodeTransformer(b), data.BOSID, data.EOSID, opts)
	}
	if e.dec == nil {
		return e.Models[0].Decoder.BeamShortlist(e.Models[0].Encode(b), b.SrcLengths, data.BOSID, data.EOSID, opts, short)
	}
	if short != nil {
		return nil, fmt.Errorf("ensemble: a shortlist with %d models", len(e.Models))
	}
	return e.dec.Beam(e.encode(b), b.SrcLengths, data.BOSID, data.EOSID, opts)
}
