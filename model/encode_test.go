package model

import (
	"github.com/attend-nmt/attend/data"
	"github.com/attend-nmt/attend/decoder"
	"github.com/attend-nmt/attend/encoder"
	"github.com/attend-nmt/attend/kernels"
	"github.com/attend-nmt/attend/transformer"
)

// Encode runs a recurrent model's encoder over a batch, for the tests that drive its decoder directly.
func (m *Seq2Seq[T]) Encode(b *data.Batch) *encoder.Output[T] { return m.net.(rnnNet[T]).encode(b) }

// EncodeTransformer runs a Transformer's encoder over a batch, for the tests that drive it directly.
func (m *Seq2Seq[T]) EncodeTransformer(b *data.Batch) *transformer.Memory[T] {
	return m.net.(transformerNet[T]).encode(b)
}

// beamOf is decoder.Beam of a batch by m alone, with its own float32 output layer.
func beamOf[T kernels.Float](m *Seq2Seq[T], b *data.Batch, opts decoder.BeamOptions) ([][]decoder.Scored, error) {
	return decoder.Beam([]decoder.Session[T]{m.Session(b)}, b.SrcLengths[:b.Rows], b.SrcLen, m.TgtVocab.Size(), data.BOSID, data.EOSID, opts, decoder.Output[T]{})
}
