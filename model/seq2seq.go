// Package model is the attention seq2seq model as a whole: it ties the encoder, the alignment and the decoder
// to one parameter set, trains them (loss, gradients through gorgonia, clipping, Adam), and saves and restores
// everything as checkpoints.
package model

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/attend-nmt/attend/align"
	"github.com/attend-nmt/attend/data"
	"github.com/attend-nmt/attend/decoder"
	"github.com/attend-nmt/attend/encoder"
	"github.com/attend-nmt/attend/internal/plural"
	"github.com/attend-nmt/attend/kernels"
	"github.com/attend-nmt/attend/lexicon"
	"github.com/attend-nmt/attend/param"
	"github.com/attend-nmt/attend/transformer"
)

// Seq2Seq is the encoder, the attention and the decoder over one parameter set, with the vocabularies they index
// and, for a model trained on subwords, the merges that split words into the vocabularies' tokens.
type Seq2Seq[T kernels.Float] struct {
	Cfg                ModelConfig
	SrcVocab, TgtVocab *data.Vocab
	// Subwords splits the words of both sides into the vocabularies' subwords (data.subword bpe), nil when the
	// vocabularies hold words. Translating splits the input with it and joins the output back into words.
	Subwords *data.BPE
	// Lexicon lists each source word's likely translations (IBM Model 1 on the training corpus), from which
	// translation builds a sentence's shortlist; nil for models trained before it existed.
	Lexicon *lexicon.Table
	Params  *param.Set[T]
	// Encoder and Decoder are the recurrent model's (model.type rnn); Transformer is nil then. A Transformer
	// (model.type transformer) has them nil.
	Encoder     *encoder.Encoder[T]
	Decoder     *decoder.Decoder[T]
	Transformer *transformer.Model[T]
}

// New builds a model with zero weights; call Init or load a checkpoint.
func New[T kernels.Float](cfg ModelConfig, src, tgt *data.Vocab) (*Seq2Seq[T], error) {
	return newModel[T](cfg, src, tgt, param.NewSet[T](), nil)
}

// newModel registers the model's parameters in set: a real set, or a shape-only one (param.NewShapeSet) to
// learn what a config implies without allocating it. The attention function comes from scores (nil:
// align.Builtin).
func newModel[T kernels.Float](cfg ModelConfig, src, tgt *data.Vocab, set *param.Set[T], scores align.Registry[T]) (*Seq2Seq[T], error) {
	if cfg.IsTransformer() {
		tf, err := transformer.New(set, cfg.transformerConfig(src.Size(), tgt.Size()))
		if err != nil {
			return nil, err
		}
		set.Pack()
		return &Seq2Seq[T]{Cfg: cfg, SrcVocab: src, TgtVocab: tgt, Params: set, Transformer: tf}, nil
	}
	if err := encoder.Cell(cfg.Cell).Validate(); err != nil {
		return nil, err
	}
	if err := encoder.CheckSelfAttention(cfg.SelfAttentionLayers, cfg.Heads, 2*cfg.EncHidden); err != nil {
		return nil, err
	}
	enc := encoder.New(set, encoder.Config{Vocab: src.Size(), Emb: cfg.Emb, Hidden: cfg.EncHidden, Cell: encoder.Cell(cfg.Cell),
		Layers: cfg.Layers, SelfAttentionLayers: cfg.SelfAttentionLayers, Heads: cfg.Heads})
	dec, err := decoder.New(set, decoder.Config{Vocab: tgt.Size(), Emb: cfg.Emb, Hidden: cfg.DecHidden, MemDim: 2 * cfg.EncHidden,
		Attn: cfg.AttnDim, Attention: cfg.Attention, Window: cfg.Window, Heads: cfg.Heads, Temperature: cfg.Temperature,
		InputFeeding: cfg.InputFeeding, Layers: cfg.Layers, AttendAfterInput: cfg.AttendAfterInput,
		FullContextAlignment: cfg.FullContextAlignment}, scores)
	if err != nil {
		return nil, err
	}
	set.Pack() // one buffer for all weights; the graphs' views are taken later
	return &Seq2Seq[T]{Cfg: cfg, SrcVocab: src, TgtVocab: tgt, Params: set, Encoder: enc, Decoder: dec}, nil
}

// Init draws fresh weights from rng, as PyTorch initialises the same layers.
func (m *Seq2Seq[T]) Init(rng *rand.Rand) {
	if m.Transformer != nil {
		m.Transformer.Init(rng)
		return
	}
	m.Encoder.Init(rng)
	m.Decoder.Init(rng)
}

// Encode runs the recurrent encoder over a batch; a Transformer encodes with EncodeTransformer.
func (m *Seq2Seq[T]) Encode(b *data.Batch) *encoder.Output[T] {
	return m.Encoder.Forward(b.Src, b.SrcLengths, b.Rows, b.SrcLen)
}

// Greedy translates the real rows of a batch greedily, at most maxLen words each.
func (m *Seq2Seq[T]) Greedy(b *data.Batch, maxLen int) []decoder.Hypothesis {
	if m.Transformer != nil {
		return m.Transformer.Greedy(m.EncodeTransformer(b), data.BOSID, data.EOSID, maxLen)[:b.Real]
	}
	hyps := m.Decoder.Greedy(m.Encode(b), b.SrcLengths, data.BOSID, data.EOSID, maxLen)
	return hyps[:b.Real]
}

// Loss returns the summed cross-entropy of a batch's target words under teacher forcing, without dropout, and
// the number of words it covers: the validation loss, computed by the plain-Go forward pass.
func (m *Seq2Seq[T]) Loss(b *data.Batch) (sum float64, tokens int) {
	var logits []T
	if m.Transformer != nil {
		logits = m.Transformer.Force(m.EncodeTransformer(b), b.TgtIn, b.TgtLen).Logits
	} else {
		logits, _ = m.Decoder.TeacherForced(m.Encode(b), b.SrcLengths, b.TgtIn, b.TgtLen)
	}
	v := m.TgtVocab.Size()
	for i, y := range b.TgtOut {
		if y == data.PadID {
			continue
		}
		row := logits[i*v : (i+1)*v]
		sum += logSumExp(row) - float64(row[y])
		tokens++
	}
	return sum, tokens
}

func logSumExp[T kernels.Float](row []T) float64 {
	maxv := row[0]
	for _, x := range row {
		maxv = max(maxv, x)
	}
	var s float64
	for _, x := range row {
		s += math.Exp(float64(x - maxv))
	}
	return float64(maxv) + math.Log(s)
}

// Describe is a one-line summary of the model's size.
func (m *Seq2Seq[T]) Describe() string {
	if m.Transformer != nil {
		c := m.Transformer.Cfg
		tied := ""
		if c.TieOutput {
			tied = ", tied output layer"
		}
		return fmt.Sprintf("Transformer of %s each side, width %d, %s, feed-forward %d, %s positions%s, vocab %d→%d, %s",
			plural.Count(c.Layers, "block"), c.Dim, plural.Count(c.Heads, "head"), c.FF, m.Cfg.Positions, tied,
			m.SrcVocab.Size(), m.TgtVocab.Size(), plural.Count(m.Params.Len(), "parameter"))
	}
	self := ""
	if n := m.Cfg.SelfAttentionLayers; n > 0 {
		self = fmt.Sprintf(" + %s of %s", plural.Count(n, "self-attention layer"), plural.Count(m.Cfg.Heads, "head"))
	}
	layers := ""
	if n := m.Cfg.Layers; n > 1 {
		layers = fmt.Sprintf("%d layers of ", n)
	}
	return fmt.Sprintf("%s%s encoder %d×2%s, decoder %d, attention %s %d, emb %d, vocab %d→%d, %s",
		layers, m.Cfg.Cell, m.Cfg.EncHidden, self, m.Cfg.DecHidden, m.Cfg.Attention, m.Cfg.AttnDim, m.Cfg.Emb, m.SrcVocab.Size(), m.TgtVocab.Size(), plural.Count(m.Params.Len(), "parameter"))
}
