package decoder

import (
	"slices"

	"github.com/attend-nmt/attend/encoder"
	"github.com/attend-nmt/attend/kernels"
)

// session is a Decoder's Session: its state of the batch's rows (and a second one that Reorder gathers into),
// the memory each row attends over, and Step's scratch. Rows that leave or are repeated move only their state;
// a row's memory is copied from the start's, one row per sentence, only when the row comes to hold another
// sentence than before.
type session[T kernels.Float] struct {
	d        *Decoder[T]
	st, next *State[T]
	mem      *Memory[T] // the rows' memory: start's until the first Reorder, then the session's own
	start    *Memory[T] // one row per sentence, from Start
	sent     []int      // the sentence whose memory each row of mem holds (-1: none yet)
	spare    []int      // Reorder's scratch
	buf      *Scratch[T]
	rowCap   int // the rows st, next, mem and buf have room for
}

var _ advancer[float32] = (*session[float32])(nil)

// Session starts decoding the rows of enc, whose source lengths are lengths, as a Session: Start's memory and
// initial state, one row per sentence.
func (d *Decoder[T]) Session(enc *encoder.Output[T], lengths []int) Session[T] {
	// The session's memory moves its own rows, lengths included: a lengths slice shared by two members of an
	// ensemble would move twice.
	mem, st := d.Start(enc, slices.Clone(lengths[:enc.Rows]))
	return &session[T]{d: d, st: st, mem: mem, start: mem, buf: d.NewScratch(enc.Rows, enc.SrcLen), rowCap: enc.Rows}
}

// Step is Session's: Decoder.Step of the session's rows.
func (s *session[T]) Step(prev []int, logits, weights []T) {
	s.d.Step(s.st, prev, s.mem, s.buf, logits, weights)
}

// advance is Decoder.advance of the session's rows.
func (s *session[T]) advance(prev []int, weights []T) []T {
	s.d.advance(s.st, prev, s.mem, s.buf, weights)
	return s.buf.outIn[:len(prev)*s.d.OutIn()]
}

func (s *session[T]) decoder() *Decoder[T] { return s.d }

// Reorder is Session's: the state of new row r is gathered from old row from[r], and its memory copied from
// the start's when its sentence changes.
func (s *session[T]) Reorder(from []int) {
	n := len(from)
	if cap(s.spare) < n {
		s.spare = make([]int, n)
	}
	sent := s.spare[:n] // the sentence of each new row
	for r, f := range from {
		if s.mem == s.start {
			sent[r] = f
		} else {
			sent[r] = s.sent[f]
		}
	}
	if s.mem == s.start || n > s.rowCap {
		s.grow(max(n, s.rowCap))
	}
	s.next.Rows = n
	for r, f := range from {
		s.next.CopyRow(r, s.st, f)
	}
	s.st, s.next = s.next, s.st
	for r, j := range sent {
		if s.sent[r] != j {
			s.mem.CopyRow(r, s.start, j)
			s.sent[r] = j
		}
	}
	s.mem.Rows = n
}

// grow gives the session buffers of its own with room for c rows (the start's memory is the encoder's, which
// the session must not move): the state keeps its rows, the memory's rows are copied again as they are used.
func (s *session[T]) grow(c int) {
	srcLen := s.start.SrcLen
	st := s.d.newState(c, srcLen)
	st.Rows = s.st.Rows
	for r := range s.st.Rows {
		st.CopyRow(r, s.st, r)
	}
	s.st, s.next = st, s.d.newState(c, srcLen)
	s.mem = &Memory[T]{SrcLen: srcLen, MemDim: s.start.MemDim, KeyWidth: s.start.KeyWidth,
		States: make([]T, c*srcLen*s.start.MemDim), Keys: make([]T, c*srcLen*s.start.KeyWidth), Lengths: make([]int, c)}
	s.sent = slices.Repeat([]int{-1}, c)
	if c > s.rowCap {
		s.buf, s.rowCap = s.d.NewScratch(c, srcLen), c
	}
}
