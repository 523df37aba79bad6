package transformer

// The embedding layers, the one part of the stacks that is not a block (package block has those), a plain-Go
// forward pass and its backward pass, llm.c style. Activations are batch-major: row r·L+i of an (N, width)
// buffer is position i of sentence r, N = B·L. The dropout masks are time-major, as the trainer draws them:
// value (i·B+r)·D+u masks column u of position i of sentence r.

import (
	"math"

	"github.com/attend-nmt/attend/kernels"
)

// embedding is one side's embedding layer: x = (√D · E[w] + P) ⊙ mask over ids time-major (L×B), x batch-major.
type embedding[T kernels.Float] struct {
	table, pos []T // (V, D); the learned positions (MaxPositions, D), or nil for sinusoidal ones
	dim        int
}

// position returns the row of positions of position i: sinusoid (L, D) holds the sinusoidal ones.
func (e embedding[T]) position(i int, sinusoid []T) []T {
	d := e.dim
	if e.pos == nil {
		return sinusoid[i*d : (i+1)*d]
	}
	at := min(i, len(e.pos)/d-1) // later positions reuse the last learned one
	return e.pos[at*d : (at+1)*d]
}

// sinusoids writes the sinusoidal positions 0 … steps−1 into out (steps, D) when the positions are not learned.
func (e embedding[T]) sinusoids(out []T, steps int) {
	if e.pos != nil {
		return
	}
	for i := 0; i < steps; i++ {
		Position(out[i*e.dim:(i+1)*e.dim], i)
	}
}

// word writes into x (D) the embedding of word id at position i, √D · E[id] + P_i: sinusoid holds the
// sinusoidal positions up to i.
func (e embedding[T]) word(x []T, id, i int, sinusoid []T) {
	scale := T(math.Sqrt(float64(e.dim)))
	er, pr := e.table[id*e.dim:][:e.dim], e.position(i, sinusoid)
	for u := range x {
		x[u] = scale*er[u] + pr[u]
	}
}

// forward writes x (B·L, D) for the ids (time-major L×B); sinusoid is sinusoids' table.
func (e embedding[T]) forward(x []T, ids []int, rows, steps int, mask, sinusoid []T) {
	d := e.dim
	for r := 0; r < rows; r++ {
		for i := 0; i < steps; i++ {
			xr := x[(r*steps+i)*d:][:d]
			e.word(xr, ids[i*rows+r], i, sinusoid)
			if mask != nil {
				kernels.MulSlice(xr, mask[(i*rows+r)*d:][:d])
			}
		}
	}
}

// backward adds into dTable (and dPos, learned positions only) the gradient of forward given dx.
func (e embedding[T]) backward(dTable, dPos, dx []T, ids []int, rows, steps int, mask []T) {
	d := e.dim
	scale := T(math.Sqrt(float64(d)))
	for r := 0; r < rows; r++ {
		for i := 0; i < steps; i++ {
			id := ids[i*rows+r]
			g, dt := dx[(r*steps+i)*d:][:d], dTable[id*d:][:d]
			var mr []T
			if mask != nil {
				mr = mask[(i*rows+r)*d:][:d]
			}
			var dp []T
			if e.pos != nil {
				at := min(i, len(e.pos)/d-1)
				dp = dPos[at*d : (at+1)*d]
			}
			// forward: x = (√D · E[id] + P_i) ⊙ mask
			for u, gu := range g {
				if mr != nil {
					gu *= mr[u]
				}
				dt[u] += scale * gu
				if dp != nil {
					dp[u] += gu
				}
			}
		}
	}
}
