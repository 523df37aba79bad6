// Package align scores decoder states against encoder states and turns the scores into attention weights and a
// context vector: the score functions sit behind one Scorer interface, and masking, softmax and the weighted sum
// happen once, in Attend, for all of them.
package align

import (
	"fmt"

	"github.com/attend-nmt/attend/kernels"
)

// Scorer computes alignment scores e_ti between decoder queries and the encoder memory of a batch. The memory is
// (rows, srcLen, MemDim) and a query batch is (rows, QueryDim). What depends only on the memory is computed once
// per sentence by Keys and reused at every decoder step.
type Scorer[T kernels.Float] interface {
	// Keys precomputes the memory-only part of the score; the result is opaque to callers.
	Keys(memory []T, rows, srcLen int) []T
	// Score writes the scores (rows, srcLen) of queries against precomputed keys.
	Score(query, keys []T, rows, srcLen int, scores []T)
}

// Attend turns scores (rows, srcLen) into attention weights and context vectors: positions at or past a row's
// length are masked, so their weight is exactly 0; the rest go through a max-shifted softmax; the context of row
// r is Σ_i weights[r,i] · memory[r,i,:] (rows, memDim). scores is left unchanged.
func Attend[T kernels.Float](scores []T, lengths []int, memory []T, rows, srcLen, memDim int, weights, ctx []T) {
	if len(scores) != rows*srcLen || len(weights) != rows*srcLen || len(memory) != rows*srcLen*memDim || len(ctx) != rows*memDim {
		panic(fmt.Sprintf("align: Attend shapes: scores %d weights %d memory %d ctx %d for rows=%d srcLen=%d memDim=%d",
			len(scores), len(weights), len(memory), len(ctx), rows, srcLen, memDim))
	}
	copy(weights, scores)
	for r := 0; r < rows; r++ {
		kernels.SoftmaxRow(weights[r*srcLen:(r+1)*srcLen], lengths[r])
		// ctx[r] (1, memDim) = weights[r] (1, srcLen) · memory[r] (srcLen, memDim)
		kernels.Gemm(false, false, 1, memDim, srcLen, 1, weights[r*srcLen:(r+1)*srcLen], srcLen,
			memory[r*srcLen*memDim:(r+1)*srcLen*memDim], memDim, 0, ctx[r*memDim:(r+1)*memDim], memDim)
	}
}
