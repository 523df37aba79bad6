package transformer

import (
	"github.com/attend-nmt/attend/block"
	"github.com/attend-nmt/attend/kernels"
	"github.com/attend-nmt/attend/param"
)

// stackWeights is the encoder's or the decoder's weights (or their gradients) as slices, the output layer
// excluded.
type stackWeights[T kernels.Float] struct {
	emb, pos []T // pos nil with sinusoidal positions
	blocks   []block.BlockWeights[T]
	norm     block.NormWeights[T]
}

// encoderTensors lists the encoder's parameters in a fixed order: the order of the encoder op's inputs and of
// weightsOf's slices. The encoder's embeddings come first.
func (m *Model[T]) encoderTensors() []*param.Tensor[T] {
	return m.stackTensors(false, m.SrcEmb, m.SrcPos, m.Enc, m.EncNorm)
}

// decoderTensors lists the decoder's parameters (without the output layer) in the order of weightsOf's slices.
// The target embeddings come first.
func (m *Model[T]) decoderTensors() []*param.Tensor[T] {
	return m.stackTensors(true, m.TgtEmb, m.TgtPos, m.Dec, m.DecNorm)
}

// stackTensors lists a stack's parameters: the embeddings, the positions (when learned), every block's
// (block.List) and the final layer norm's.
func (m *Model[T]) stackTensors(decoder bool, emb, pos *param.Tensor[T], blocks []block.BlockTensors[T], norm block.NormTensors[T]) []*param.Tensor[T] {
	out := []*param.Tensor[T]{emb}
	if pos != nil {
		out = append(out, pos)
	}
	for _, b := range blocks {
		out = append(out, block.List(m.block(decoder), b)...)
	}
	return append(out, norm.Gain, norm.Bias)
}

// weightsOf reads w, slices in the order of encoderTensors (or, with decoder, decoderTensors).
// (The stacks have as many blocks, and learned positions both or neither.)
func (m *Model[T]) weightsOf(decoder bool, w [][]T) stackWeights[T] {
	e := stackWeights[T]{emb: w[0]}
	w = w[1:]
	if m.SrcPos != nil {
		e.pos, w = w[0], w[1:]
	}
	for range m.Enc {
		var b block.BlockWeights[T]
		b, w = block.Read(m.block(decoder), w)
		e.blocks = append(e.blocks, b)
	}
	e.norm = block.NormWeights[T]{Gain: w[0], Bias: w[1]}
	return e
}
