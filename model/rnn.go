package model

import (
	"fmt"
	"math/rand/v2"

	"github.com/attend-nmt/attend/data"
	"github.com/attend-nmt/attend/decoder"
	"github.com/attend-nmt/attend/encoder"
	"github.com/attend-nmt/attend/internal/plural"
	"github.com/attend-nmt/attend/kernels"
)

// rnnNet is the recurrent model (model.type rnn): its encoder and its decoder, whose Session sentences can join
// while it decodes others (decoder.Joiner) and whose output layer a shortlist can cut (shortlister).
type rnnNet[T kernels.Float] struct {
	enc *encoder.Encoder[T]
	dec *decoder.Decoder[T]
}

// shortlister is a net whose output layer a shortlist can cut to a few words (decoder.Shortlist).
type shortlister[T kernels.Float] interface {
	outputRows() *decoder.OutputRows[T]
}

var _ shortlister[float32] = rnnNet[float32]{}

func (n rnnNet[T]) packsGates(workers int, products kernels.Products) bool {
	return workers > 1 && products.PacksWeights()
}

func (n rnnNet[T]) init(rng *rand.Rand) {
	n.enc.Init(rng)
	n.dec.Init(rng)
}

// encode runs the encoder over a batch.
func (n rnnNet[T]) encode(b *data.Batch) *encoder.Output[T] {
	return n.enc.Forward(b.Src, b.SrcLengths, b.Rows, b.SrcLen)
}

func (n rnnNet[T]) outputRows() *decoder.OutputRows[T] { return n.dec.NewOutputRows() }

func (n rnnNet[T]) session(b *data.Batch) decoder.Session[T] {
	return n.dec.Session(n.encode(b), b.SrcLengths)
}

func (n rnnNet[T]) forcedLogits(b *data.Batch) []T {
	return n.dec.TeacherForced(n.encode(b), b.SrcLengths, b.TgtIn, nil, b.TgtLen, false).Logits
}

func (n rnnNet[T]) force(b *data.Batch, vocab int) []Forced {
	// logits (TgtLen, Rows, V) and weights (TgtLen, Rows, SrcLen), time-major like the batch.
	enc := n.encode(b)
	f := n.dec.TeacherForced(enc, b.SrcLengths, b.TgtIn, b.TgtOut, b.TgtLen, true)
	srcLen, nh := b.SrcLen, n.dec.HeadCount()
	out := make([]Forced, b.Real)
	forcedSteps(out, b, f.Logits, vocab, func(r, step int) {
		n := b.SrcLengths[r]
		out[r].Attention = append(out[r].Attention, float32Row(f.Weights, step*srcLen, n))
		if f.Alignment != nil {
			out[r].Alignment = append(out[r].Alignment, float32Row(f.Alignment, step*srcLen, n))
		}
		if f.Heads != nil {
			if out[r].Heads == nil {
				out[r].Heads = make([][][]float32, nh)
			}
			for j := range out[r].Heads {
				out[r].Heads[j] = append(out[r].Heads[j], float32Row(f.Heads, (step*nh+j)*srcLen, n))
			}
		}
	})
	if enc.Self != nil {
		addSelfAttention(out, enc.Self, n.enc.Self.Heads, b.SrcLengths, srcLen)
	}
	return out
}

func (n rnnNet[T]) describe(m *Seq2Seq[T]) string {
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

func (n rnnNet[T]) alignment() bool { return n.dec.AlignW != nil }

func (n rnnNet[T]) attention(cfg ModelConfig) (string, int) { return cfg.Attention, n.dec.HeadCount() }

func (n rnnNet[T]) heads() bool { return n.dec.HeadCount() > 1 || n.enc.Self != nil }

func (n rnnNet[T]) setAttentionLayer(int) error {
	return fmt.Errorf("the model is recurrent (model.type %s) and has one attention, not decoder blocks to choose among", TypeRNN)
}
