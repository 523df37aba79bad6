package decoder

import (
	"fmt"
	"slices"

	"github.com/attend-nmt/attend/encoder"
	"github.com/attend-nmt/attend/kernels"
)

// session is a Decoder's Session, and a Joiner: its state of the batch's rows (and a second one that Reorder
// gathers into), the memory each row attends over, and Step's scratch. Rows that leave or are repeated move only
// their state; a row's memory is copied from its origin, the memory that Start made of its sentence (this
// session's or, for a row that joined, its source session's), only when the row comes to hold another sentence
// than before.
type session[T kernels.Float] struct {
	d        *Decoder[T]
	st, next *State[T]
	mem      *Memory[T]  // the rows' memory: start's until the first Reorder or Join, then the session's own
	start    *Memory[T]  // one row per sentence, from Start
	origin   []memRow[T] // where the memory each row of mem holds comes from (zero: none yet)
	spare    []memRow[T] // Reorder's scratch
	rowCap   int         // the rows st, next and mem have room for
	// bufs are Step's scratch, then that of each further part of the rows that advance steps at once, with
	// room for bufRows rows of bufSrc positions; made when first needed. views are each part's rows.
	bufs            []*Scratch[T]
	views           []sessionPart[T]
	bufRows, bufSrc int
	srcHint         int // the longest padded source of the sessions joined: the scratch is made for it
	// gates is the first layer's gate product on its weights packed once for every step of every part
	// (kernels.PackForSteps), or nil: Step's BLAS products.
	gates kernels.WeightProduct
}

// memRow is row row of a memory that Start made.
type memRow[T kernels.Float] struct {
	mem *Memory[T]
	row int
}

// sessionPart is one part of a session's rows, its state and memory viewed without copying.
type sessionPart[T kernels.Float] struct {
	st  State[T]
	mem Memory[T]
}

var (
	_ advancer[float32] = (*session[float32])(nil)
	_ Joiner[float32]   = (*session[float32])(nil)
	_ fitter            = (*session[float32])(nil)
)

// Session starts decoding the rows of enc, whose source lengths are lengths, as a Session (a Joiner): Start's
// memory and initial state, one row per sentence.
func (d *Decoder[T]) Session(enc *encoder.Output[T], lengths []int) Session[T] {
	// The session's memory moves its own rows, lengths included: a lengths slice shared by two members of an
	// ensemble would move twice.
	mem, st := d.Start(enc, slices.Clone(lengths[:enc.Rows]))
	return &session[T]{d: d, st: st, mem: mem, start: mem, rowCap: enc.Rows}
}

// Step is Session's: Decoder.Step of the session's rows.
func (s *session[T]) Step(prev []int, logits, weights []T) {
	s.split(1)
	s.d.Step(s.st, prev, s.mem, s.bufs[0], logits, weights)
}

// split makes sure that there is scratch for parts parts of the rows, each with room for every row.
func (s *session[T]) split(parts int) {
	if len(s.bufs) >= parts && s.rowCap <= s.bufRows && s.mem.SrcLen <= s.bufSrc {
		return
	}
	var gateW []T // the LSTM's weights in Step's layout, copied once for every part
	if len(s.bufs) > 0 {
		gateW = s.bufs[0].gateW
	}
	s.bufRows, s.bufSrc = max(s.rowCap, s.bufRows), max(s.mem.SrcLen, s.srcHint, s.bufSrc)
	s.bufs, s.views = make([]*Scratch[T], max(parts, len(s.bufs))), make([]sessionPart[T], max(parts, len(s.bufs)))
	for p := range s.bufs {
		s.bufs[p] = s.d.newScratch(s.bufRows, s.bufSrc, gateW)
		gateW = s.bufs[p].gateW
	}
	if s.gates == nil {
		s.gates = kernels.PackForSteps(gateW, s.d.InputWidth()+s.d.Cfg.Hidden, 4*s.d.Cfg.Hidden)
	}
	for _, b := range s.bufs {
		b.gateProduct = s.gates
	}
}

// advance is Step up to the output layer of part p of parts of the rows: rows len(prev)·p/parts up to
// len(prev)·(p+1)/parts, on that part's scratch, so that the parts may advance at once on different goroutines
// once split has made their scratch. prev and weights are every row's; the output layer's input is left in outIn.
func (s *session[T]) advance(prev []int, weights []T, p, parts int) {
	if parts == 1 {
		s.split(1)
		s.d.advance(s.st, prev, s.mem, s.bufs[0], weights)
		return
	}
	n, sl := len(prev), s.mem.SrcLen
	from, to := n*p/parts, n*(p+1)/parts
	if from == to {
		return
	}
	v, buf := &s.views[p], s.bufs[p]
	s.st.view(&v.st, from, to)
	s.mem.view(&v.mem, from, to)
	if p > 0 { // every part leaves its rows' input to the output layer in part 0's
		buf.outIn = s.bufs[0].outIn[from*s.d.OutIn():]
	}
	s.d.advance(&v.st, prev[from:to], &v.mem, buf, weights[from*sl:to*sl])
}

// outIn is the output layer's input that advance left for the first rows rows (OutIn values each).
func (s *session[T]) outIn(rows int) []T { return s.bufs[0].outIn[:rows*s.d.OutIn()] }

func (s *session[T]) decoder() *Decoder[T] { return s.d }

// originOf is where row r's memory comes from.
func (s *session[T]) originOf(r int) memRow[T] {
	if s.mem == s.start {
		return memRow[T]{s.start, r}
	}
	return s.origin[r]
}

// Reorder is Session's: the state of new row r is gathered from old row from[r], and its memory copied from
// its origin when its sentence changes.
func (s *session[T]) Reorder(from []int) {
	n := len(from)
	if cap(s.spare) < n {
		s.spare = make([]memRow[T], n)
	}
	origin := s.spare[:n] // the memory of each new row
	for r, f := range from {
		origin[r] = s.originOf(f)
	}
	if s.mem == s.start || n > s.rowCap {
		s.grow(max(n, s.rowCap), 0)
	}
	s.next.Rows = n
	for r, f := range from {
		s.next.CopyRow(r, s.st, f)
	}
	s.st, s.next = s.next, s.st
	for r, o := range origin {
		if s.origin[r] != o {
			s.mem.CopyRow(r, o.mem, o.row)
			s.origin[r] = o
		}
	}
	clear(s.origin[n:]) // the memories of rows that left may go
	clear(origin)
	s.mem.Rows = n
}

// Join is Joiner's: the joined rows' state and memory are copied after the session's rows, whose padding grows
// to the longest joined source. src must be a Session of the same Decoder.
func (s *session[T]) Join(src Session[T], rows []int) {
	o, ok := src.(*session[T])
	if !ok || o.d != s.d {
		panic(fmt.Sprintf("decoder: a %T joined a session of another decoder", src))
	}
	n, m := s.st.Rows, s.st.Rows+len(rows)
	longest := s.mem.SrcLen
	for _, r := range rows {
		longest = max(longest, o.mem.Lengths[r])
	}
	if s.mem == s.start || m > s.rowCap {
		s.grow(max(m, s.rowCap), n)
	}
	if longest > s.mem.SrcLen {
		s.setSrcLen(longest)
	}
	s.srcHint = max(s.srcHint, o.mem.SrcLen) // the longest of src's other rows, which are likely to join too
	for i, r := range rows {
		s.st.CopyRow(n+i, o.st, r)
		origin := o.originOf(r)
		s.mem.CopyRow(n+i, origin.mem, origin.row)
		s.origin[n+i] = origin
	}
	s.st.Rows, s.mem.Rows = m, m
}

// SrcLen is Joiner's: the padded source length of the session's memory.
func (s *session[T]) SrcLen() int { return s.mem.SrcLen }

// fit is fitter's: the rows are padded to the longest of their sources (at least 1), unless that saves at most
// slack positions.
func (s *session[T]) fit(slack int) {
	longest := 1
	for _, l := range s.mem.Lengths[:s.mem.Rows] {
		longest = max(longest, l)
	}
	if longest == s.mem.SrcLen || longest < s.mem.SrcLen && s.mem.SrcLen-longest <= slack {
		return
	}
	if s.mem == s.start { // the start's memory is where the rows' memories come from: it does not move
		s.grow(s.rowCap, s.mem.Rows)
	}
	s.setSrcLen(longest)
}

// setSrcLen pads the session's rows, their memory and state, to srcLen source positions; the rows past them lose
// their memory.
func (s *session[T]) setSrcLen(srcLen int) {
	s.mem.SetSrcLen(srcLen)
	s.st.SetSrcLen(srcLen)
	s.next.Rows = 0
	s.next.SetSrcLen(srcLen)
	clear(s.origin[s.mem.Rows:])
}

// grow gives the session buffers of its own with room for c rows (the start's memory is where rows' memories
// come from, which the session must not move): the state keeps its rows, and so does the memory for its first
// keep rows; the other rows' memories are copied again as they are used.
func (s *session[T]) grow(c, keep int) {
	srcLen := s.mem.SrcLen
	st := s.d.newState(c, srcLen)
	st.Rows = s.st.Rows
	for r := range s.st.Rows {
		st.CopyRow(r, s.st, r)
	}
	s.st, s.next = st, s.d.newState(c, srcLen)
	mem := &Memory[T]{Rows: s.mem.Rows, SrcLen: srcLen, MemDim: s.start.MemDim, KeyWidth: s.start.KeyWidth,
		States: make([]T, c*srcLen*s.start.MemDim), Keys: make([]T, c*srcLen*s.start.KeyWidth), Lengths: make([]int, c)}
	origin := make([]memRow[T], c)
	for r := range keep {
		mem.CopyRow(r, s.mem, r)
		origin[r] = s.originOf(r)
	}
	s.mem, s.origin, s.rowCap = mem, origin, c
}
