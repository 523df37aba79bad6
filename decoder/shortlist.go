package decoder

import (
	"fmt"

	"github.com/attend-nmt/attend/kernels"
)

// OutputRows are the output layer's weights laid out for scoring a subset of the target vocabulary: the weights
// of target word j (column j of OutW) as one contiguous row, beside its bias. Make them once per decoding job
// (NewOutputRows); searches read them and never write.
type OutputRows[T kernels.Float] struct {
	w []T // (Vocab, OutIn)
	b []T // (Vocab)
}

// NewOutputRows copies the output layer's current weights into OutputRows; they do not follow later changes of
// the weights.
func (d *Decoder[T]) NewOutputRows() *OutputRows[T] {
	v, oi := d.Cfg.Vocab, d.OutIn()
	o := &OutputRows[T]{w: make([]T, v*oi), b: append([]T(nil), d.OutB.Data...)}
	for i := range oi {
		for j, x := range d.OutW.Data[i*v : (i+1)*v] {
			o.w[j*oi+i] = x
		}
	}
	return o
}

// Shortlist restricts the sentences of a batch to their candidate target words (a lexical shortlist, see package
// lexicon): a step computes the logits of the union of the candidates of the sentences in the batch only, and
// each sentence chooses among its own candidates (greedy search takes the best; beam search normalises the
// probabilities over them, so its scores are not comparable with those of a search without the shortlist). A
// sentence's translation thus does not depend on the batch it is decoded in, up to the summation order of the
// matrix products.
type Shortlist[T kernels.Float] struct {
	Output *OutputRows[T] // the output layer by target word
	// Candidates[r] are the target ids row r may use: sorted, without repeats, at least one.
	Candidates [][]int
}

// check panics unless the shortlist has candidates for each of rows rows, sorted, without repeats and within
// a vocabulary of vocab words: a caller's mistake.
func (s *Shortlist[T]) check(rows, vocab int) {
	if s.Output == nil {
		panic("decoder: a shortlist without OutputRows")
	}
	if len(s.Candidates) < rows {
		panic(fmt.Sprintf("decoder: a shortlist with candidates for %d rows, want %d", len(s.Candidates), rows))
	}
	for r, c := range s.Candidates[:rows] {
		if len(c) == 0 || c[0] < 0 || c[len(c)-1] >= vocab {
			panic(fmt.Sprintf("decoder: row %d of a shortlist has candidates %v; want at least one, from 0 to %d", r, c, vocab-1))
		}
		for i := 1; i < len(c); i++ {
			if c[i] <= c[i-1] {
				panic(fmt.Sprintf("decoder: row %d of a shortlist has candidates %v; want them sorted, without repeats", r, c))
			}
		}
	}
}

// shortlist is the set of target words a batch scores: the union of its rows' candidates, each word with the
// number of rows that listed it, and the words' output weights gathered into one matrix whose row order is the
// order of ids. A word enters when the first row lists it and leaves when the last row listing it ends, its slot
// taken by the last word.
type shortlist[T kernels.Float] struct {
	rows  *OutputRows[T]
	oi    int
	pos   []int32 // target id → slot, -1 when absent
	ids   []int   // slot → target id
	users []int32 // slot → rows listing the word
	w     []T     // (len(ids), oi)
	b     []T     // (len(ids))
}

// newShortlist returns an empty shortlist over a vocabulary of vocab words whose output weights, outIn per word,
// rows holds.
func newShortlist[T kernels.Float](rows *OutputRows[T], vocab, outIn int) *shortlist[T] {
	s := &shortlist[T]{rows: rows, oi: outIn, pos: make([]int32, vocab)}
	for i := range s.pos {
		s.pos[i] = -1
	}
	return s
}

// add counts one more row listing each of ids (which hold no repeats).
func (s *shortlist[T]) add(ids []int) {
	for _, id := range ids {
		if id < 0 || id >= len(s.pos) {
			panic(fmt.Sprintf("decoder: candidate id %d outside the vocabulary of %d", id, len(s.pos)))
		}
		if p := s.pos[id]; p >= 0 {
			s.users[p]++
			continue
		}
		s.pos[id] = int32(len(s.ids))
		s.ids = append(s.ids, id)
		s.users = append(s.users, 1)
		s.w = append(s.w, s.rows.w[id*s.oi:(id+1)*s.oi]...)
		s.b = append(s.b, s.rows.b[id])
	}
}

// remove counts one row fewer listing each of ids, dropping the words no row lists any more.
func (s *shortlist[T]) remove(ids []int) {
	for _, id := range ids {
		p := s.pos[id]
		if s.users[p]--; s.users[p] > 0 {
			continue
		}
		last := len(s.ids) - 1
		if int(p) != last {
			moved := s.ids[last]
			s.ids[p], s.users[p], s.b[p] = moved, s.users[last], s.b[last]
			copy(s.w[int(p)*s.oi:(int(p)+1)*s.oi], s.w[last*s.oi:])
			s.pos[moved] = p
		}
		s.pos[id] = -1
		s.ids, s.users, s.b, s.w = s.ids[:last], s.users[:last], s.b[:last], s.w[:last*s.oi]
	}
}

// output computes the logits of rows rows over the shortlist's words from … to-1 (slots), into logits laid out
// (rows, len(ids)).
func (s *shortlist[T]) output(rows int, outIn, logits []T, from, to int) {
	n := len(s.ids)
	kernels.Gemm(false, true, rows, to-from, s.oi, 1, outIn, s.oi, s.w[from*s.oi:], s.oi, 0, logits[from:], n)
	kernels.AddBiasStrided(logits[from:], rows, n, s.b[from:to])
}

// argmax returns the candidate of ids (target ids in the shortlist) whose logit in row (len(ids) of them laid out
// by slot) is largest; the smallest id among equals.
func (s *shortlist[T]) argmax(row []T, ids []int) int {
	best := ids[0]
	bestX := row[s.pos[best]]
	for _, id := range ids[1:] {
		if x := row[s.pos[id]]; x > bestX {
			best, bestX = id, x
		}
	}
	return best
}
