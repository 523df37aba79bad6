package transformer

import (
	"fmt"

	"github.com/attend-nmt/attend/decoder"
	"github.com/attend-nmt/attend/kernels"
)

// session is the Transformer's decoder.Joiner: Step, State.Reorder and State.Join on the state that Start made.
type session[T kernels.Float] struct {
	m  *Model[T]
	st *State[T]
}

// Session starts decoding the sentences of mem as a decoder.Joiner, on which decoder.Greedy and decoder.Beam
// search: each row reads its own sentence's memory, whose cross-attention keys and values Start computes once;
// beams of a sentence, and rows joined into another session of m, share them (State.Reorder and State.Join move
// only a pointer).
func (m *Model[T]) Session(mem *Memory[T]) decoder.Joiner[T] {
	return &session[T]{m: m, st: m.Start(mem)}
}

// Step is Model.Step of the session's state.
func (s *session[T]) Step(prev []int, logits, weights []T) { s.m.Step(s.st, prev, logits, weights) }

// Reorder is State.Reorder of the session's state.
func (s *session[T]) Reorder(from []int) { s.st.Reorder(from) }

// Join is State.Join of the session's state and src's, which must be a session of the same model.
func (s *session[T]) Join(src decoder.Session[T], rows []int) {
	o, ok := src.(*session[T])
	if !ok || o.m != s.m {
		panic(fmt.Sprintf("transformer: Join of a %T, not a session of the same model", src))
	}
	s.st.Join(o.st, rows)
}

// SrcLen is State.SrcLen of the session's state.
func (s *session[T]) SrcLen() int { return s.st.SrcLen() }
