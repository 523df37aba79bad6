package data

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
)

// Batch is a padded, time-major batch. Row r holds examples[Index[r]] for r < Real; rows Real..Rows-1 exist
// only with BatchOptions.FixedRows and are padding rows: source length 0, all-pad source and targets.
type Batch struct {
	Rows, Real int   // rows in the tensors; real examples (Real <= Rows)
	SrcLen     int   // S: padded source length (the longest row, rounded up to a multiple of RoundLen)
	TgtLen     int   // T: decoder steps (the longest target + 1, rounded likewise); 0 when there are no targets
	Src        []int // S*Rows, time-major: Src[t*Rows+r]; PadID past each row's length
	SrcLengths []int // Rows: the source length of each row
	TgtIn      []int // T*Rows, time-major: <s> y1 … yn, then PadID (nil when there are no targets)
	TgtOut     []int // T*Rows, time-major: y1 … yn </s>, then PadID (nil when there are no targets)
	Index      []int // Real: position of each real row in the examples slice given to MakeBatches
}

// TgtTokens returns the number of non-pad entries in TgtOut: the token count the loss averages over.
func (b *Batch) TgtTokens() int {
	n := 0
	for _, y := range b.TgtOut {
		if y != PadID {
			n++
		}
	}
	return n
}

// BatchOptions controls batching. Zero (or negative) values mean BatchSize 64, ChunkBatches 100, RoundLen 1,
// and no token budget.
type BatchOptions struct {
	BatchSize    int  // sentence pairs per batch; with a token budget, the most a batch may have
	BatchTokens  int  // token budget of a batch: rows × the longer padded side (OpenNMT-py's batch_type tokens)
	ChunkBatches int  // sort by source length within chunks of this many batches
	RoundLen     int  // round S and T up to a multiple of this (bounds the number of distinct shapes)
	FixedRows    bool // pad every batch to BatchSize rows
	Shuffle      bool // shuffle the examples before chunking and the batches after (needs rng)
}

// MakeBatches cuts examples into batches exactly as the PyTorch reference implementation that the speed figures
// compare against (see docs/speed.md) does in its function `batches`: with Shuffle, shuffle the example indices; take chunks of
// BatchSize×ChunkBatches indices; stable-sort each chunk by source length; cut it into batches of BatchSize
// (the last batch of a chunk may be smaller); with Shuffle, shuffle the list of batches.
//
// With a token budget (BatchTokens > 0), each sorted chunk is cut instead into batches as large as the budget
// allows: a batch grows while its rows times its longer padded side (source, or target plus one) stays within
// BatchTokens and it has at most BatchSize rows; a single pair longer than the budget makes a batch of its own.
//
// Without Shuffle the order is deterministic and rng may be nil. With Shuffle, rng is used for exactly two
// calls, rng.Shuffle(len(examples), …) and then rng.Shuffle(len(batches), …), so the same rng state gives the
// same batches; Shuffle with a nil rng panics. MakeBatches is PlanBatches with every batch padded at once.
func MakeBatches(examples []Example, opt BatchOptions, rng *rand.Rand) []Batch {
	src := Examples(examples)
	p := PlanBatches(src, opt, rng)
	batches := make([]Batch, p.Len())
	for k := range batches {
		batches[k], _ = p.Batch(k, src) // a slice of examples cannot fail
	}
	return batches
}

// Source is what batches are cut from: a number of examples, the lengths of each, and each one's ids. A slice
// of examples is one (Examples); a Store, which may keep its ids on disk, is another. Lens and Example are
// called from more than one goroutine at a time.
type Source interface {
	Len() int
	// Lens returns the source and target lengths of example i; tgt is -1 when it has no target (Tgt nil).
	Lens(i int) (src, tgt int)
	Example(i int) (Example, error)
}

// Examples is a slice of examples as a Source.
type Examples []Example

// Len is the number of examples.
func (e Examples) Len() int { return len(e) }

// Lens returns the lengths of example i, -1 for a target that is nil.
func (e Examples) Lens(i int) (src, tgt int) {
	if e[i].Tgt == nil {
		return len(e[i].Src), -1
	}
	return len(e[i].Src), len(e[i].Tgt)
}

// Example returns example i.
func (e Examples) Example(i int) (Example, error) { return e[i], nil }

// Plan is the batches of an epoch before they are padded: which examples each one holds, in the order they are
// trained on. It takes 4 bytes an example, where the padded batches take tens; Batch pads one when it is due.
type Plan struct {
	opt     BatchOptions
	order   []int32   // example indices, chunk by chunk, each chunk sorted by source length
	batches []planned // in the order they are taken
}

// planned is a batch of a Plan: its examples order[start:end], and its real rows and padded lengths.
type planned struct{ start, end, real, srcLen, tgtLen int32 }

// PlanBatches chooses the batches of src exactly as MakeBatches does (the same examples in the same rows, in
// the same order, from the same rng calls), without padding them.
func PlanBatches(src Source, opt BatchOptions, rng *rand.Rand) *Plan {
	if opt.BatchSize <= 0 {
		opt.BatchSize = 64
	}
	if opt.ChunkBatches <= 0 {
		opt.ChunkBatches = 100
	}
	if opt.Shuffle && rng == nil {
		panic("data: MakeBatches with Shuffle needs an rng")
	}
	n := src.Len()
	p := &Plan{opt: opt, order: make([]int32, n)}
	for i := range p.order {
		p.order[i] = int32(i)
	}
	if opt.Shuffle {
		rng.Shuffle(n, func(i, j int) { p.order[i], p.order[j] = p.order[j], p.order[i] })
	}
	type keyed struct{ srcLen, tgtLen, index int32 }
	chunk := opt.BatchSize * opt.ChunkBatches
	var part []keyed
	for start := 0; start < n; start += chunk {
		end := min(start+chunk, n)
		part = part[:0]
		for _, i := range p.order[start:end] {
			s, t := src.Lens(int(i))
			part = append(part, keyed{int32(s), int32(t), i})
		}
		slices.SortStableFunc(part, func(a, b keyed) int { return cmp.Compare(a.srcLen, b.srcLen) })
		for k, e := range part {
			p.order[start+k] = e.index
		}
		for first := 0; first < len(part); {
			last := min(first+opt.BatchSize, len(part))
			if opt.BatchTokens > 0 {
				last = first + tokenBatchRows(part[first:last], func(e keyed) (int, int) { return int(e.srcLen), int(e.tgtLen) }, opt)
			}
			srcLen, tgtLen := 0, 0
			for _, e := range part[first:last] {
				srcLen = max(srcLen, int(e.srcLen))
				if e.tgtLen >= 0 {
					tgtLen = max(tgtLen, int(e.tgtLen)+1)
				}
			}
			p.batches = append(p.batches, planned{start: int32(start + first), end: int32(start + last), real: int32(last - first),
				srcLen: int32(roundUp(srcLen, opt.RoundLen)), tgtLen: int32(roundUp(tgtLen, opt.RoundLen))})
			first = last
		}
	}
	if opt.Shuffle {
		rng.Shuffle(len(p.batches), func(i, j int) { p.batches[i], p.batches[j] = p.batches[j], p.batches[i] })
	}
	return p
}

// Len is the number of batches.
func (p *Plan) Len() int { return len(p.batches) }

// Shape returns batch k's size without padding it: rows in its tensors, real examples among them, and its
// padded source and target lengths (as Batch's fields of the same names).
func (p *Plan) Shape(k int) (rows, real, srcLen, tgtLen int) {
	b := p.batches[k]
	rows = int(b.real)
	if p.opt.FixedRows {
		rows = p.opt.BatchSize
	}
	return rows, int(b.real), int(b.srcLen), int(b.tgtLen)
}

// Batch pads batch k, reading its examples from src (the source the plan was made from).
func (p *Plan) Batch(k int, src Source) (Batch, error) {
	span := p.order[p.batches[k].start:p.batches[k].end]
	idx := make([]int, len(span))
	examples := make([]Example, len(span))
	for r, i := range span {
		idx[r] = int(i)
		var err error
		if examples[r], err = src.Example(int(i)); err != nil {
			return Batch{}, err
		}
	}
	return newBatch(examples, idx, p.opt), nil
}

// BatchReader pads the batches of a plan in order, one ahead of the one being trained on, on a goroutine of
// its own (reading a Store on disk then overlaps with training). Close it when done.
type BatchReader struct {
	next chan batchOrError
	stop chan struct{}
	done chan struct{}
}

type batchOrError struct {
	b   Batch
	err error
}

// Read returns a reader of the plan's batches from batch from on.
func (p *Plan) Read(src Source, from int) *BatchReader {
	r := &BatchReader{next: make(chan batchOrError, 1), stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(r.done)
		defer close(r.next)
		for k := from; k < p.Len(); k++ {
			b, err := p.Batch(k, src)
			select {
			case r.next <- batchOrError{b, err}:
			case <-r.stop:
				return
			}
			if err != nil {
				return
			}
		}
	}()
	return r
}

// Next returns the next batch; past the plan's last it returns an error.
func (r *BatchReader) Next() (Batch, error) {
	n, ok := <-r.next
	if !ok {
		return Batch{}, fmt.Errorf("data: no batches left")
	}
	return n.b, n.err
}

// Close stops the reader's goroutine and waits for it.
func (r *BatchReader) Close() {
	close(r.stop)
	<-r.done
}

// tokenBatchRows returns how many of the examples at idx, from the first, fit in one batch under the token
// budget: at least one. lens gives an example's source and target lengths (target -1: none).
func tokenBatchRows[E any](idx []E, lens func(E) (int, int), opt BatchOptions) int {
	longest := 0
	for n, e := range idx {
		srcLen, tgtLen := lens(e)
		side := roundUp(srcLen, opt.RoundLen)
		if tgtLen >= 0 {
			side = max(side, roundUp(tgtLen+1, opt.RoundLen))
		}
		longest = max(longest, side)
		if n > 0 && (n+1)*longest > opt.BatchTokens {
			return n
		}
	}
	return len(idx)
}

func roundUp(n, multiple int) int {
	if multiple <= 1 || n == 0 {
		return n
	}
	return (n + multiple - 1) / multiple * multiple
}

// newBatch pads examples (those at idx of the source) into one time-major batch.
func newBatch(examples []Example, idx []int, opt BatchOptions) Batch {
	rows := len(idx)
	if opt.FixedRows {
		rows = opt.BatchSize
	}
	b := Batch{Rows: rows, Real: len(idx), Index: idx, SrcLengths: make([]int, rows)}
	hasTgt := false
	for _, ex := range examples {
		b.SrcLen = max(b.SrcLen, len(ex.Src))
		if ex.Tgt != nil {
			hasTgt = true
			b.TgtLen = max(b.TgtLen, len(ex.Tgt)+1)
		}
	}
	b.SrcLen, b.TgtLen = roundUp(b.SrcLen, opt.RoundLen), roundUp(b.TgtLen, opt.RoundLen)
	b.Src = make([]int, b.SrcLen*rows)
	if hasTgt {
		b.TgtIn, b.TgtOut = make([]int, b.TgtLen*rows), make([]int, b.TgtLen*rows)
	}
	for r, ex := range examples {
		b.SrcLengths[r] = len(ex.Src)
		for t, id := range ex.Src {
			b.Src[t*rows+r] = id
		}
		if ex.Tgt == nil {
			continue
		}
		b.TgtIn[r] = BOSID
		for t, id := range ex.Tgt {
			b.TgtOut[t*rows+r] = id
			b.TgtIn[(t+1)*rows+r] = id
		}
		b.TgtOut[len(ex.Tgt)*rows+r] = EOSID
	}
	return b
}
