package block

import (
	"math"

	"github.com/attend-nmt/attend/kernels"
)

// FFWeights is one position-wise feed-forward layer's weights (or their gradients): W1 (D, F), B1 (F), W2
// (F, D), B2 (D).
type FFWeights[T kernels.Float] struct{ W1, B1, W2, B2 []T }

// FeedForward is one feed-forward layer of N rows, D wide with F inner units, and what its forward pass keeps.
type FeedForward[T kernels.Float] struct {
	N, Dim, Inner int
	H             []T // (N, D) the input of the last Forward (not a copy)
	Act           []T // (N, F) ReLU(h W1 + b1)
}

// NewFeedForward takes a feed-forward layer's buffer from arena under name.
func NewFeedForward[T kernels.Float](arena *kernels.Arena[T], name string, n, dim, inner int) *FeedForward[T] {
	return &FeedForward[T]{N: n, Dim: dim, Inner: inner, Act: arena.Get(name, n*inner)}
}

// Forward writes out = ReLU(h W1 + b1) W2 + b2 (N, D), or with accumulate adds it: out += act W2, then b2.
func (c *FeedForward[T]) Forward(w FFWeights[T], h, out []T, accumulate bool) {
	n, d, f := c.N, c.Dim, c.Inner
	c.H = h
	kernels.Linear(h, w.W1, n, d, f, c.Act, f)
	kernels.AddBias(c.Act, n, f, w.B1)
	for i, a := range c.Act {
		c.Act[i] = max(a, 0)
	}
	beta := T(0)
	if accumulate {
		beta = 1
	}
	kernels.Gemm(false, false, n, d, f, 1, c.Act, f, w.W2, d, beta, out, d)
	kernels.AddBias(out, n, d, w.B2)
}

// Backward adds the gradients of the weights into dw and of h into dh, given dOut (read only); dAct is (N, F)
// scratch.
func (c *FeedForward[T]) Backward(w, dw FFWeights[T], dOut, dh, dAct []T) {
	n, d, f := c.N, c.Dim, c.Inner
	// forward: out = act W2 + b2
	kernels.AddColumnSums(dw.B2, dOut, n, d)
	clear(dAct)
	kernels.LinearBackward(c.Act, w.W2, dOut, n, f, d, d, dAct, dw.W2)
	// forward: act = ReLU(pre) = max(pre, +0), so dpre = dact where act > 0
	reluMask(dAct, c.Act)
	// forward: pre = h W1 + b1
	kernels.AddColumnSums(dw.B1, dAct, n, f)
	kernels.LinearBackward(c.H, w.W1, dAct, n, d, f, f, dh, dw.W1)
}

// reluMask zeroes dAct where act, a ReLU's output (+0 or positive), is 0. It tests the bits rather than
// branching, since the signs are random and a branch mispredicts half the time: x | −x has its top bit set
// exactly when x ≠ 0.
func reluMask[T kernels.Float](dAct, act []T) {
	switch a := any(act).(type) {
	case []float32:
		d := any(dAct).([]float32)[:len(a)]
		for i, v := range a {
			x := math.Float32bits(v)
			keep := uint32(int32(x|-x) >> 31)
			d[i] = math.Float32frombits(math.Float32bits(d[i]) & keep)
		}
	case []float64:
		d := any(dAct).([]float64)[:len(a)]
		for i, v := range a {
			x := math.Float64bits(v)
			keep := uint64(int64(x|-x) >> 63)
			d[i] = math.Float64frombits(math.Float64bits(d[i]) & keep)
		}
	}
}
