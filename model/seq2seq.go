// Package model is the attention seq2seq model as a whole: it ties the encoder, the alignment and the decoder
// to one parameter set, trains them (loss, gradients through gorgonia, clipping, Adam), and saves and restores
// everything as checkpoints.
package model

import (
	"math"
	"math/rand/v2"

	"github.com/attend-nmt/attend/align"
	"github.com/attend-nmt/attend/data"
	"github.com/attend-nmt/attend/decoder"
	"github.com/attend-nmt/attend/encoder"
	"github.com/attend-nmt/attend/kernels"
	"github.com/attend-nmt/attend/lexicon"
	"github.com/attend-nmt/attend/param"
	"github.com/attend-nmt/attend/transformer"
	G "gorgonia.org/gorgonia"
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
	// net is what the model type does: an encoder and a stepper (decoder.Session) behind one interface,
	// chosen once by newModel.
	net net[T]
}

// net is what differs between the model types (rnn.go, transformer.go), so that no other code asks which type
// a model is: newModel picks it.
type net[T kernels.Float] interface {
	// init draws fresh weights.
	init(rng *rand.Rand)
	// session encodes a batch, without dropout, and starts decoding its rows.
	session(b *data.Batch) decoder.Session[T]
	// forcedLogits are a batch's logits under teacher forcing, without dropout: (TgtLen, Rows, V), time-major.
	forcedLogits(b *data.Batch) []T
	// force is Seq2Seq.Force.
	force(b *data.Batch, vocab int) []Forced
	// describe is Seq2Seq.Describe.
	describe(m *Seq2Seq[T]) string
	// heads reports whether translations have attention heads to show (Seq2Seq.HasHeads).
	heads() bool
	// attention is Seq2Seq.Attention.
	attention(cfg ModelConfig) (name string, heads int)
	// alignment reports whether the model has an alignment attention (Seq2Seq.HasAlignment).
	alignment() bool
	// setAttentionLayer is Seq2Seq.SetAttentionLayer.
	setAttentionLayer(layer int) error
	// trainingBytes is the part of TrainingMemory's estimate that depends on the model type: the activations of
	// the largest batch b, and the scratch that products beyond float32's take, over a target vocabulary of
	// vocab words.
	trainingBytes(m ModelConfig, products kernels.Products, b largestBatch, vocab int64) (activations, scratch int64)
	// packsGates reports whether training with workers workers in products packs the decoder's gate weights
	// once a step (Seq2Seq.PacksDecoderGates).
	packsGates(workers int, products kernels.Products) bool
	// graph builds the training graph of a batch shape into tg, whose params and feed slices are made, with the
	// dropout masks that mask makes and guided alignment's gold guide (nil without), and compiles it.
	graph(tg *trainGraph[T], cfg ModelConfig, s shape, fused bool, lossOpts decoder.GraphLoss, mask maskFunc, guide *G.Node) (*trainGraph[T], error)
}

// PacksDecoderGates reports whether training the model with workers workers in products runs the recurrent
// decoder's gate products on float32 weights packed once a step (kernels.PackedGemm, through
// kernels.PackWeights): with several workers (whose products run on one thread each), where the products pack
// them (kernels.Products.PacksWeights). A Transformer has no gates to pack.
func (m *Seq2Seq[T]) PacksDecoderGates(workers int, products kernels.Products) bool {
	return m.net.packsGates(workers, products)
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
		return &Seq2Seq[T]{Cfg: cfg, SrcVocab: src, TgtVocab: tgt, Params: set, Transformer: tf, net: transformerNet[T]{tf}}, nil
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
	return &Seq2Seq[T]{Cfg: cfg, SrcVocab: src, TgtVocab: tgt, Params: set, Encoder: enc, Decoder: dec, net: rnnNet[T]{enc, dec}}, nil
}

// Init draws fresh weights from rng, as PyTorch initialises the same layers.
func (m *Seq2Seq[T]) Init(rng *rand.Rand) { m.net.init(rng) }

// Session encodes a batch, without dropout, and starts decoding its rows: the decoder.Session that
// decoder.Greedy and decoder.Beam search on.
func (m *Seq2Seq[T]) Session(b *data.Batch) decoder.Session[T] { return m.net.session(b) }

// Greedy translates the real rows of a batch greedily, at most maxLen words each.
func (m *Seq2Seq[T]) Greedy(b *data.Batch, maxLen int) []decoder.Hypothesis {
	hyps, _ := decoder.Greedy([]decoder.Session[T]{m.Session(b)}, b.SrcLengths[:b.Rows], b.SrcLen, m.TgtVocab.Size(), data.BOSID, data.EOSID, maxLen, nil)
	return hyps[:b.Real]
}

// Loss returns the summed cross-entropy of a batch's target words under teacher forcing, without dropout, and
// the number of words it covers: the validation loss, computed by the plain-Go forward pass.
func (m *Seq2Seq[T]) Loss(b *data.Batch) (sum float64, tokens int) {
	logits := m.net.forcedLogits(b)
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
func (m *Seq2Seq[T]) Describe() string { return m.net.describe(m) }

// HasHeads reports whether the model's translations have attention heads to show: several heads of multi-head
// attention or of a Transformer's attention layer, or self-attention layers in the encoder.
func (m *Seq2Seq[T]) HasHeads() bool { return m.net.heads() }

// Attention names the attention whose weights translations report, for a description of the model: the score
// function of a recurrent model (model.attention) or "transformer" (the cross-attention of one decoder block),
// and its number of heads.
func (m *Seq2Seq[T]) Attention() (name string, heads int) { return m.net.attention(m.Cfg) }

// HasAlignment reports whether the model has an alignment attention (model.full_context_alignment) besides its
// decoder's: Force then gives its weights (Forced.Alignment).
func (m *Seq2Seq[T]) HasAlignment() bool { return m.net.alignment() }

// SetAttentionLayer makes a Transformer report the attention of decoder block layer (1 to model.layers) as where
// it looked, in place of model.attention_layer's: heat maps, alignments and --attention then read that block
// (averaged over its heads, or its head model.alignment_head alone).
// A recurrent model has no such blocks: an error.
func (m *Seq2Seq[T]) SetAttentionLayer(layer int) error { return m.net.setAttentionLayer(layer) }
