package model

import (
	"fmt"
	"math/rand/v2"

	"github.com/attend-nmt/attend/data"
	"github.com/attend-nmt/attend/decoder"
	"github.com/attend-nmt/attend/internal/plural"
	"github.com/attend-nmt/attend/kernels"
	"github.com/attend-nmt/attend/transformer"
	G "gorgonia.org/gorgonia"
)

// transformerConfig is the shape of m's Transformer (model.type transformer) over vocabularies of srcV and tgtV
// tokens.
func (m ModelConfig) transformerConfig(srcV, tgtV int) transformer.Config {
	layers := max(m.Layers, 1)
	at := m.AttentionLayer
	if at == 0 || at > layers {
		at = layers // 0 is the last; a larger value is Validate's to report
	}
	return transformer.Config{SrcVocab: srcV, TgtVocab: tgtV, Dim: m.DModel, Heads: m.Heads, FF: m.FF, Layers: layers,
		Positions: m.Positions, MaxPositions: m.MaxPositions, TieOutput: m.TiedEmbeddings, AttentionLayer: at - 1, AlignmentHead: m.AlignmentHead}
}

// validateTransformer reports the settings a Transformer cannot take: heads that do not divide model.d_model, an
// attention layer past the last block, an alignment head past the last head, guided alignment without one, and
// the recurrent model's features it does not have.
func (m ModelConfig) validateTransformer(t TrainConfig) []error {
	var errs []error
	if m.Heads < 1 || m.DModel%m.Heads != 0 {
		errs = append(errs, fmt.Errorf("config: model.heads is %d, which does not divide model.d_model %d", m.Heads, m.DModel))
	}
	if layers := max(m.Layers, 1); m.AttentionLayer > layers {
		errs = append(errs, fmt.Errorf("config: model.attention_layer is %d, past the last of model.layers = %d decoder blocks", m.AttentionLayer, layers))
	}
	if m.AlignmentHead > m.Heads && m.Heads >= 1 {
		errs = append(errs, fmt.Errorf("config: model.alignment_head is %d, past the last of model.heads = %d heads", m.AlignmentHead, m.Heads))
	}
	switch {
	case m.SelfAttentionLayers > 0:
		errs = append(errs, fmt.Errorf("config: model.self_attention_layers is %d with model.type transformer, whose blocks are model.layers; set it to 0", m.SelfAttentionLayers))
	case m.FullContextAlignment:
		errs = append(errs, fmt.Errorf("config: model.full_context_alignment is not available with model.type transformer"))
	case t.GuidedAlignment != "" && m.AlignmentHead == 0:
		errs = append(errs, fmt.Errorf("config: train.guided_alignment with model.type transformer trains one head of one block's attention over the source: set model.alignment_head to that head (1 to model.heads = %d), in block model.attention_layer", m.Heads))
	}
	return errs
}

// transformerNet is the Transformer (model.type transformer).
type transformerNet[T kernels.Float] struct{ tf *transformer.Model[T] }

func (n transformerNet[T]) init(rng *rand.Rand) { n.tf.Init(rng) }

// encode runs the Transformer's encoder over a batch, without dropout.
func (n transformerNet[T]) encode(b *data.Batch) *transformer.Memory[T] {
	return n.tf.Encode(b.Src, b.SrcLengths, b.Rows, b.SrcLen)
}

func (n transformerNet[T]) session(b *data.Batch) decoder.Session[T] {
	return n.tf.Session(n.encode(b))
}

func (n transformerNet[T]) forcedLogits(b *data.Batch) []T {
	return n.tf.Force(n.encode(b), b.TgtIn, b.TgtLen).Logits
}

// force is Seq2Seq.Force for a Transformer: the attention is the cross-attention of the decoder block
// model.attention_layer, averaged over its heads or model.alignment_head's alone, and Heads are all its heads
// (the attention is the search's Hypothesis.Attention).
func (n transformerNet[T]) force(b *data.Batch, vocab int) []Forced {
	f := n.tf.Force(n.encode(b), b.TgtIn, b.TgtLen)
	srcLen, nh, head := b.SrcLen, n.tf.Cfg.Heads, n.tf.Cfg.AlignmentHead
	heads := f.Cross[n.tf.Cfg.AttentionLayer*nh:][:nh]
	out := make([]Forced, b.Real)
	forcedSteps(out, b, f.Logits, vocab, func(r, step int) {
		n := b.SrcLengths[r]
		reported := make([]float32, n)
		if nh > 1 && out[r].Heads == nil {
			out[r].Heads = make([][][]float32, nh)
		}
		for j, w := range heads {
			att := float32Row(w, step*srcLen, n)
			switch head {
			case 0:
				for i, a := range att {
					reported[i] += a / float32(nh)
				}
			case j + 1:
				copy(reported, att)
			}
			if nh > 1 {
				out[r].Heads[j] = append(out[r].Heads[j], att)
			}
		}
		out[r].Attention = append(out[r].Attention, reported)
	})
	return out
}

func (n transformerNet[T]) packsGates(int, kernels.Products) bool { return false }

func (n transformerNet[T]) describe(m *Seq2Seq[T]) string {
	c := n.tf.Cfg
	tied := ""
	if c.TieOutput {
		tied = ", tied output layer"
	}
	return fmt.Sprintf("Transformer of %s each side, width %d, %s, feed-forward %d, %s positions%s, vocab %d→%d, %s",
		plural.Count(c.Layers, "block"), c.Dim, plural.Count(c.Heads, "head"), c.FF, m.Cfg.Positions, tied,
		m.SrcVocab.Size(), m.TgtVocab.Size(), plural.Count(m.Params.Len(), "parameter"))
}

func (n transformerNet[T]) alignment() bool { return false }

func (n transformerNet[T]) attention(ModelConfig) (string, int) { return "transformer", n.tf.Cfg.Heads }

func (n transformerNet[T]) heads() bool { return n.tf.Cfg.Heads > 1 }

func (n transformerNet[T]) setAttentionLayer(layer int) error {
	if l := n.tf.Cfg.Layers; layer < 1 || layer > l {
		return fmt.Errorf("the Transformer has decoder blocks 1 to %d, not %d", l, layer)
	}
	n.tf.Cfg.AttentionLayer = layer - 1
	return nil
}

// graph builds the Transformer's training graph into tg (see net.graph).
func (n transformerNet[T]) graph(tg *trainGraph[T], _ ModelConfig, s shape, fused bool, lossOpts decoder.GraphLoss, mask maskFunc, guide *G.Node) (*trainGraph[T], error) {
	if guide != nil && n.tf.Cfg.AlignmentHead == 0 {
		return nil, fmt.Errorf("model: guided alignment of a Transformer trains one head of its attention: set model.alignment_head")
	}
	// Every mask of a Transformer is (steps, rows, d_model); unfused, the stacks are gorgonia's ops.
	d := n.tf.Cfg.Dim
	tf := func(name string, steps int) *G.Node { return mask(name, steps, d, steps, s.rows, d) }
	build := n.tf.Graph
	if !fused {
		build = n.tf.UnfusedGraph
	}
	tg.loss, tg.guided = build(tg.params, &tg.src, &tg.srcLengths, &tg.tgtIn, &tg.tgtOut, s.rows, s.srcLen, s.tgtLen, tf,
		lossOpts.LabelSmoothing, data.PadID, guide, lossOpts.GuideWeight)
	return tg.compile()
}
