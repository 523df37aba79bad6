package transformer

import (
	"github.com/attend-nmt/attend/decoder"
	"github.com/attend-nmt/attend/kernels"
)

// session is the Transformer's decoder.Session: Step and State.Reorder on the state that Start made.
type session[T kernels.Float] struct {
	m  *Model[T]
	st *State[T]
}

// Session starts decoding the sentences of mem as a decoder.Session, on which decoder.Greedy and decoder.Beam
// search: each row reads its own sentence's memory, whose cross-attention keys and values Start computes once;
// beams of a sentence share them (State.Reorder moves only an index).
func (m *Model[T]) Session(mem *Memory[T]) decoder.Session[T] {
	return &session[T]{m: m, st: m.Start(mem)}
}

// Step is Model.Step of the session's state.
func (s *session[T]) Step(prev []int, logits, weights []T) { s.m.Step(s.st, prev, logits, weights) }

// Reorder is State.Reorder of the session's state.
func (s *session[T]) Reorder(from []int) { s.st.Reorder(from) }
