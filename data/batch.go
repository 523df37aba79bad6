package data

import (
	"cmp"
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

// SrcMask reports whether source position t of row r is a real token (t < SrcLengths[r]), not padding.
func (b *Batch) SrcMask(t, r int) bool { return t < b.SrcLengths[r] }

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

// MakeBatches cuts examples into batches exactly as the PyTorch peer's `batches` does
// (../shared/bench/peer_torch.py): with Shuffle, shuffle the example indices; take chunks of
// BatchSize×ChunkBatches indices; stable-sort each chunk by source length; cut it into batches of BatchSize
// (the last batch of a chunk may be smaller); with Shuffle, shuffle the list of batches.
//
// With a token budget (BatchTokens > 0), each sorted chunk is cut instead into batches as large as the budget
// allows: a batch grows while its rows times its longer padded side (source, or target plus one) stays within
// BatchTokens and it has at most BatchSize rows; a single pair longer than the budget makes a batch of its own.
//
// Without Shuffle the order is deterministic and rng may be nil. With Shuffle, rng is used for exactly two
// calls, rng.Shuffle(len(examples), …) and then rng.Shuffle(len(batches), …), so the same rng state gives the
// same batches; Shuffle with a nil rng panics.
func MakeBatches(examples []Example, opt BatchOptions, rng *rand.Rand) []Batch {
	if opt.BatchSize <= 0 {
		opt.BatchSize = 64
	}
	if opt.ChunkBatches <= 0 {
		opt.ChunkBatches = 100
	}
	if opt.Shuffle && rng == nil {
		panic("data: MakeBatches with Shuffle needs an rng")
	}
	order := make([]int, len(examples))
	for i := range order {
		order[i] = i
	}
	if opt.Shuffle {
		rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
	}
	chunk := opt.BatchSize * opt.ChunkBatches
	batches := make([]Batch, 0, (len(order)+opt.BatchSize-1)/opt.BatchSize)
	for start := 0; start < len(order); start += chunk {
		part := order[start:min(start+chunk, len(order))]
		slices.SortStableFunc(part, func(a, b int) int { return cmp.Compare(len(examples[a].Src), len(examples[b].Src)) })
		for first := 0; first < len(part); {
			end := min(first+opt.BatchSize, len(part))
			if opt.BatchTokens > 0 {
				end = first + tokenBatchRows(examples, part[first:end], opt)
			}
			batches = append(batches, newBatch(examples, part[first:end], opt))
			first = end
		}
	}
	if opt.Shuffle {
		rng.Shuffle(len(batches), func(i, j int) { batches[i], batches[j] = batches[j], batches[i] })
	}
	return batches
}

// tokenBatchRows returns how many of the examples at idx, from the first, fit in one batch under the token
// budget: at least one.
func tokenBatchRows(examples []Example, idx []int, opt BatchOptions) int {
	longest := 0
	for n, i := range idx {
		ex := examples[i]
		side := roundUp(len(ex.Src), opt.RoundLen)
		if ex.Tgt != nil {
			side = max(side, roundUp(len(ex.Tgt)+1, opt.RoundLen))
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
