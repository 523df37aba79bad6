package model

import (
	"fmt"

	"github.com/attend-nmt/attend/data"
	"github.com/attend-nmt/attend/kernels"
	"github.com/attend-nmt/attend/transformer"
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

// EncodeTransformer runs a Transformer's encoder over a batch, without dropout.
func (m *Seq2Seq[T]) EncodeTransformer(b *data.Batch) *transformer.Memory[T] {
	return m.Transformer.Encode(b.Src, b.SrcLengths, b.Rows, b.SrcLen)
}

// forceTransformer is Force for a Transformer: the attention is the cross-attention of the decoder block
// model.attention_layer, averaged over its heads or model.alignment_head's alone, and Heads are all its heads
// (the attention is the search's Hypothesis.Attention).
func forceTransformer[T kernels.Float](m *Seq2Seq[T], b *data.Batch) []Forced {
	f := m.Transformer.Force(m.EncodeTransformer(b), b.TgtIn, b.TgtLen)
	srcLen, nh, head := b.SrcLen, m.Transformer.Cfg.Heads, m.Transformer.Cfg.AlignmentHead
	heads := f.Cross[m.Transformer.Cfg.AttentionLayer*nh:][:nh]
	out := make([]Forced, b.Real)
	forcedSteps(out, b, f.Logits, m.TgtVocab.Size(), func(r, step int) {
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

// SetAttentionLayer makes a Transformer report the attention of decoder block layer (1 to model.layers) as where
// it looked, in place of model.attention_layer's: heat maps, alignments and --attention then read that block
// (averaged over its heads, or its head model.alignment_head alone).
// A recurrent model has no such blocks: an error.
func (m *Seq2Seq[T]) SetAttentionLayer(layer int) error {
	if m.Transformer == nil {
		return fmt.Errorf("the model is recurrent (model.type %s) and has one attention, not decoder blocks to choose among", TypeRNN)
	}
	if n := m.Transformer.Cfg.Layers; layer < 1 || layer > n {
		return fmt.Errorf("the Transformer has decoder blocks 1 to %d, not %d", n, layer)
	}
	m.Transformer.Cfg.AttentionLayer = layer - 1
	return nil
}
