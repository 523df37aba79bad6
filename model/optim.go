package model

import (
	"fmt"
	"math"

	"github.com/attend-nmt/attend/kernels"
	"github.com/attend-nmt/attend/param"
)

// Adam is the Adam optimizer (Kingma & Ba 2015) with PyTorch's defaults: β1 0.9, β2 0.999, ε 1e-8, bias
// correction. Its moments are parameter-shaped sets, so they are saved with the checkpoint by name.
type Adam[T kernels.Float] struct {
	LR, Beta1, Beta2, Eps float64
	Steps                 int           // updates made so far (the t of the bias correction)
	M, V                  *param.Set[T] // first and second moments
}

// NewAdam returns an optimizer for parameters shaped like params.
func NewAdam[T kernels.Float](params *param.Set[T], lr float64) *Adam[T] {
	return &Adam[T]{LR: lr, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, M: params.ZerosLike(), V: params.ZerosLike()}
}

// StepScaled updates params in place from grads, every gradient multiplied by scale first (g ← scale·g, rounded
// to T as a separate scaling pass would: gradient clipping folded into the update, so the gradients are read
// once):
//
//	m = β1 m + (1-β1) g;  v = β2 v + (1-β2) g²;  p -= lr · (m / (1-β1^t)) / (sqrt(v / (1-β2^t)) + ε)
func (a *Adam[T]) StepScaled(params, grads *param.Set[T], scale T) {
	a.Steps++
	c1 := 1 - math.Pow(a.Beta1, float64(a.Steps))
	c2 := 1 - math.Pow(a.Beta2, float64(a.Steps))
	// 1-β is taken in float64 before rounding to T: in float32, 1 - float32(0.999) is 0.00099998713, 1.3e-5
	// below 0.001, which would shrink every second moment against the float64 bias correction c2.
	b1, b2, ob1, ob2 := T(a.Beta1), T(a.Beta2), T(1-a.Beta1), T(1-a.Beta2)
	stepSize := a.LR / c1
	sqrtC2 := math.Sqrt(c2)
	// All four sets are packed alike (ZerosLike keeps the order), so one index walks them together.
	w, g, m, v := params.Flat(), grads.Flat(), a.M.Flat(), a.V.Flat()
	if len(g) != len(w) || len(m) != len(w) || len(v) != len(w) {
		panic(fmt.Sprintf("model: Adam over %d parameters got %d gradients and %d/%d moments", len(w), len(g), len(m), len(v)))
	}
	// A tensor that stands for several PyTorch parameters (param.Tensor.Copies, an LSTM's b_ih + b_hh) steps
	// that many times as far: each of the parameters it stands for would take the same step.
	for _, run := range params.CopyRuns() {
		step := stepSize * float64(run.Copies)
		w, g, m, v := w[run.Lo:run.Hi], g[run.Lo:run.Hi], m[run.Lo:run.Hi], v[run.Lo:run.Hi]
		if w32, ok := any(w).([]float32); ok {
			// float32: the whole update in float32, vectorized (kernels.AdamUpdate), as PyTorch's Adam computes it.
			c := kernels.AdamCoeffs{Scale: float32(scale), Beta1: float32(b1), Beta2: float32(b2), OneMinusBeta1: float32(ob1),
				OneMinusBeta2: float32(ob2), StepSize: float32(step), SqrtC2: float32(sqrtC2), Eps: float32(a.Eps)}
			g32, m32, v32 := any(g).([]float32), any(m).([]float32), any(v).([]float32)
			kernels.Parallel(len(w), adamChunk, func(lo, hi int) { kernels.AdamUpdate(w32[lo:hi], g32[lo:hi], m32[lo:hi], v32[lo:hi], c) })
			continue
		}
		kernels.Parallel(len(w), adamChunk, func(lo, hi int) {
			for j := lo; j < hi; j++ {
				gj := g[j] * scale
				m[j] = b1*m[j] + ob1*gj
				v[j] = b2*v[j] + ob2*gj*gj
				w[j] -= T(step * float64(m[j]) / (math.Sqrt(float64(v[j]))/sqrtC2 + a.Eps))
			}
		})
	}
}

// adamChunk is the fewest parameters that Adam updates on a core of its own (kernels.Parallel): the optimizer
// touches every parameter once per step, memory-bound work that two cores share well.
const adamChunk = 65536

// normBlock is the number of gradients whose squares GlobalNorm sums into one partial sum. The blocks are fixed
// by this size alone, not by the number of workers, so the norm is the same bit for bit on any number of cores.
const normBlock = 1 << 15

// GlobalNorm is the joint L2 norm of every gradient, a tensor with Copies counted that many times (as
// PyTorch's clip_grad_norm_ counts an LSTM's b_ih and b_hh). The squares are summed in float64 over fixed blocks of
// normBlock values, the blocks shared out over the cores, then the partial sums are added in block order: a
// fixed summation order, so the norm, and a resumed run, are reproducible bit for bit.
func GlobalNorm[T kernels.Float](grads *param.Set[T]) float64 {
	g := grads.Flat()
	partial := make([]float64, normBlocks(len(g)))
	kernels.Parallel(len(partial), 4, func(lo, hi int) {
		for k := lo; k < hi; k++ {
			partial[k] = sumSquares(g[k*normBlock : min((k+1)*normBlock, len(g))])
		}
	})
	return normOf(grads, partial)
}

// normBlocks is the number of norm blocks of n gradients.
func normBlocks(n int) int { return (n + normBlock - 1) / normBlock }

// sumSquares is the sum of the squares of x in float64: one norm block's partial sum. Four running sums, of the
// values at indices 0, 1, 2 and 3 mod 4, are added as (s0+s1)+(s2+s3) at the end: four additions in flight
// instead of one chain, a fixed order whatever the cores.
func sumSquares[T kernels.Float](x []T) float64 {
	var s0, s1, s2, s3 float64
	i := 0
	for ; i+4 <= len(x); i += 4 {
		a, b, c, d := float64(x[i]), float64(x[i+1]), float64(x[i+2]), float64(x[i+3])
		s0 += a * a
		s1 += b * b
		s2 += c * c
		s3 += d * d
	}
	for ; i < len(x); i++ {
		v := float64(x[i])
		s0 += v * v
	}
	return (s0 + s1) + (s2 + s3)
}

// normOf is GlobalNorm of grads from its blocks' partial sums (sumSquares of each normBlock values of Flat).
func normOf[T kernels.Float](grads *param.Set[T], partial []float64) float64 {
	var sq float64
	for _, p := range partial {
		sq += p
	}
	// A tensor that stands for several PyTorch parameters counts once more for each further copy.
	for _, t := range grads.List() {
		if t.Copies > 1 {
			sq += float64(t.Copies-1) * sumSquares(t.Data)
		}
	}
	return math.Sqrt(sq)
}

// ClipScale is the factor that brings gradients of the given norm to at most maxNorm, as PyTorch's
// clip_grad_norm_ computes it: maxNorm/(norm+1e-6) when that is below 1, else 1. maxNorm <= 0 (no clipping) and a
// non-finite norm give 1.
func ClipScale(norm, maxNorm float64) float64 {
	if maxNorm > 0 && isFinite(norm) {
		if coef := maxNorm / (norm + 1e-6); coef < 1 {
			return coef
		}
	}
	return 1
}
