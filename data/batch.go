package data

import (
	"math/rand/v2"
	"sort"
)

// Batch is a padded, time-major batch. Row r is example Index[r] for r < Real; rows Real..Rows-1 exist only with
// BatchOptions.FixedRows and are padding: source length 0, all-pad targets.
type Batch struct {
	Rows, Real int   // rows in the tensors; real examples
	SrcLen     int   // S: padded source length (the longest row, rounded up to a multiple of RoundLen)
	TgtLen     int   // T: decoder steps (the longest target + 1, rounded likewise); 0 without targets
	Src        []int // S×Rows, time-major: Src[t*Rows+r]; PadID past a row's length
	SrcLengths []int // Rows
	TgtIn      []int // T×Rows: <s> y1 … yn, then PadID
	TgtOut     []int // T×Rows: y1 … yn </s>, then PadID
	Index      []int // Real: position of each real row in the examples given to MakeBatches
}

// TgtTokens is the number of non-padding target entries: the words the loss averages over.
func (b *Batch) TgtTokens() int {
	n := 0
	for _, y := range b.TgtOut {
		if y != PadID {
			n++
		}
	}
	return n
}

// SrcMask reports whether source position t of row r is a real word.
func (b *Batch) SrcMask(t, r int) bool { return t < b.SrcLengths[r] }

// BatchOptions controls batching. Zero values mean BatchSize 64, ChunkBatches 100, RoundLen 1.
type BatchOptions struct {
	BatchSize    int  // sentence pairs per batch
	ChunkBatches int  // sort by source length within chunks of this many batches
	RoundLen     int  // round S and T up to a multiple of this (bounds the number of distinct shapes)
	FixedRows    bool // pad every batch to BatchSize rows
	Shuffle      bool // shuffle the examples before chunking and the batches after (needs rng)
}

// MakeBatches cuts examples into batches as the PyTorch peer does: shuffle the example order (with Shuffle),
// stable-sort chunks of BatchSize×ChunkBatches examples by source length, cut each chunk into batches, shuffle
// the batches (with Shuffle). The same rng state gives the same batches; without Shuffle rng may be nil.
func MakeBatches(examples []Example, opt BatchOptions, rng *rand.Rand) []Batch {
	if opt.BatchSize <= 0 {
		opt.BatchSize = 64
	}
	if opt.ChunkBatches <= 0 {
		opt.ChunkBatches = 100
	}
	order := make([]int, len(examples))
	for i := range order {
		order[i] = i
	}
	if opt.Shuffle {
		rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
	}
	chunk := opt.BatchSize * opt.ChunkBatches
	var batches []Batch
	for start := 0; start < len(order); start += chunk {
		part := order[start:min(start+chunk, len(order))]
		sort.SliceStable(part, func(i, j int) bool { return len(examples[part[i]].Src) < len(examples[part[j]].Src) })
		for b := 0; b < len(part); b += opt.BatchSize {
			batches = append(batches, newBatch(examples, part[b:min(b+opt.BatchSize, len(part))], opt))
		}
	}
	if opt.Shuffle {
		rng.Shuffle(len(batches), func(i, j int) { batches[i], batches[j] = batches[j], batches[i] })
	}
	return batches
}

func roundUp(n, multiple int) int {
	if multiple <= 1 || n == 0 {
		return n
	}
	return (n + multiple - 1) / multiple * multiple
}

// newBatch pads the examples at idx into one time-major batch.
func newBatch(examples []Example, idx []int, opt BatchOptions) Batch {
	rows := len(idx)
	if opt.FixedRows {
		rows = opt.BatchSize
	}
	b := Batch{Rows: rows, Real: len(idx), Index: append([]int(nil), idx...), SrcLengths: make([]int, rows)}
	hasTgt := false
	for _, i := range idx {
		b.SrcLen = max(b.SrcLen, len(examples[i].Src))
		if examples[i].Tgt != nil {
			hasTgt = true
			b.TgtLen = max(b.TgtLen, len(examples[i].Tgt)+1)
		}
	}
	b.SrcLen, b.TgtLen = roundUp(b.SrcLen, opt.RoundLen), roundUp(b.TgtLen, opt.RoundLen)
	b.Src = make([]int, b.SrcLen*rows)
	if hasTgt {
		b.TgtIn, b.TgtOut = make([]int, b.TgtLen*rows), make([]int, b.TgtLen*rows)
	}
	for r, i := range idx {
		ex := examples[i]
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
