package block

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/attend-nmt/attend/internal/gradcheck"
	"github.com/attend-nmt/attend/kernels"
)

// attnCase is one attention to check: queries from rows × lq positions over rows × lk keys.
type attnCase struct {
	name         string
	shape        Attention
	rows, lq, lk int
	keyLen       []int
	queryLen     []int
	causal       bool
}

var attnCases = []attnCase{
	{"cross-attention, widths differ, per-head projections", Attention{Heads: 2, HeadDim: 3, QueryDim: 5, MemDim: 4, OutDim: 7, PerHead: true},
		2, 3, 4, []int{4, 2}, nil, false},
	{"self-attention over padded rows", Attention{Heads: 3, HeadDim: 2, QueryDim: 6, MemDim: 6, OutDim: 6}, 3, 4, 4, []int{4, 2, 0}, []int{4, 2, 0}, false},
	{"causal self-attention", Attention{Heads: 2, HeadDim: 2, QueryDim: 4, MemDim: 4, OutDim: 4}, 2, 3, 3, nil, nil, true},
}

// attnWeights draws an attention's weights (and zero gradients of the same shapes) from rng.
func attnWeights(a Attention, rng *rand.Rand) (w, dw Weights[float64]) {
	width := a.Width()
	sizes := []int{a.QueryDim * width, width, a.MemDim * width, width, a.MemDim * width, width, width * a.OutDim, a.OutDim}
	var ws, ds [8][]float64
	for i, n := range sizes {
		ws[i], ds[i] = gradcheck.Random(rng, n, 1), make([]float64, n)
	}
	w = Weights[float64]{ws[0], ws[1], ws[2], ws[3], ws[4], ws[5], ws[6], ws[7]}
	dw = Weights[float64]{ds[0], ds[1], ds[2], ds[3], ds[4], ds[5], ds[6], ds[7]}
	return w, dw
}

// attnRun is one case's attention with random weights, inputs and projection, drawn by setup.
type attnRun struct {
	w, dw         Weights[float64]
	x, m, project []float64
	arena         *kernels.Arena[float64]
	cache         *Cache[float64]
	out           []float64
}

// setup draws c's weights, queries x, memory m and output projection from rng, in that order.
func (c attnCase) setup(rng *rand.Rand) *attnRun {
	a := &attnRun{arena: kernels.NewArena[float64]()}
	a.w, a.dw = attnWeights(c.shape, rng)
	a.x, a.m = gradcheck.Random(rng, c.rows*c.lq*c.shape.QueryDim, 1), gradcheck.Random(rng, c.rows*c.lk*c.shape.MemDim, 1)
	a.project = gradcheck.Random(rng, c.rows*c.lq*c.shape.OutDim, 1)
	a.cache = NewCache(a.arena, "a", c.shape, c.rows, c.lq, c.lk, c.keyLen, c.queryLen, c.causal)
	a.out = make([]float64, len(a.project))
	return a
}

// loss runs the forward pass and returns Σ out ⊙ project.
func (a *attnRun) loss() float64 {
	a.cache.Forward(a.w, a.x, a.m, a.out, false)
	return gradcheck.Dot(a.out, a.project)
}

// backward adds the gradient of loss, as of the last forward pass, into dx, dm and dw.
func (a *attnRun) backward(dx, dm []float64) {
	a.cache.Backward(a.w, a.dw, a.project, dx, dm, NewScratch(a.arena, "a.grad", a.cache))
}

// TestAttentionBackwardMatchesFiniteDifferences: every gradient of Cache.Backward against central finite
// differences of Σ out ⊙ project, except b_K's, which the next test checks.
func TestAttentionBackwardMatchesFiniteDifferences(t *testing.T) {
	for _, c := range attnCases {
		t.Run(c.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, 2))
			a := c.setup(rng)
			w, dw, x, m, loss := a.w, a.dw, a.x, a.m, a.loss
			loss()
			dx, dm := make([]float64, len(x)), make([]float64, len(m))
			a.backward(dx, dm)
			gradcheck.Check(t, loss, []gradcheck.Tensor{{Name: "x", X: x, Grad: dx}, {Name: "m", X: m, Grad: dm},
				{Name: "W_Q", X: w.QW, Grad: dw.QW}, {Name: "b_Q", X: w.QB, Grad: dw.QB}, {Name: "W_K", X: w.KW, Grad: dw.KW},
				{Name: "W_V", X: w.VW, Grad: dw.VW}, {Name: "b_V", X: w.VB, Grad: dw.VB}, {Name: "W_O", X: w.OW, Grad: dw.OW},
				{Name: "b_O", X: w.OB, Grad: dw.OB}}, 30, rng, 1e-5)
		})
	}
}

// TestKeyBiasGradientIsZero states the rule for b_K's gradient, written once in Cache.Backward for every
// attention (align's, the encoder's self-attention layers', the Transformer's): it is exactly 0. b_K adds
// q_i·b_K to every score of query i, which the softmax does not see, so the loss does not depend on b_K at all:
// finite differences find nothing (to float64 rounding), and Backward leaves the gradient at 0 rather than
// summing dK into rounding noise that Adam would turn into steps of the full learning rate.
func TestKeyBiasGradientIsZero(t *testing.T) {
	for _, c := range attnCases {
		t.Run(c.name, func(t *testing.T) {
			a := c.setup(rand.New(rand.NewPCG(3, 4)))
			w, dw, loss := a.w, a.dw, a.loss
			base := loss()
			for i := range dw.KB {
				dw.KB[i] = math.NaN() // Backward must add nothing, not even 0 + rounding
			}
			a.backward(make([]float64, len(a.x)), make([]float64, len(a.m)))
			for i, g := range dw.KB {
				if !math.IsNaN(g) {
					t.Errorf("b_K[%d]: Backward changed its gradient to %g", i, g)
				}
				orig := w.KB[i]
				w.KB[i] = orig + 0.5 // a large step: the loss must not move at all, whatever the step
				up := loss()
				w.KB[i] = orig
				if gap := math.Abs(up - base); gap > 1e-12*math.Max(1, math.Abs(base)) {
					t.Errorf("b_K[%d]: the loss moved by %g when b_K moved by 0.5", i, gap)
				}
			}
			// b_Q, by contrast, moves the loss: the test would catch a loss that ignores the biases.
			w.QB[0] += 0.5
			if up := loss(); up == base {
				t.Error("b_Q moved by 0.5 left the loss unchanged")
			}
		})
	}
}

// TestStepMatchesForward: the step over cached keys and values, one query position at a time, gives the
// causal forward pass's outputs and weights.
func TestStepMatchesForward(t *testing.T) {
	a := Attention{Heads: 2, HeadDim: 3, QueryDim: 6, MemDim: 6, OutDim: 6}
	rows, steps, posCap := 2, 4, 8
	rng := rand.New(rand.NewPCG(5, 6))
	w, _ := attnWeights(a, rng)
	x := gradcheck.Random(rng, rows*steps*a.QueryDim, 1)
	whole := NewCache(kernels.NewArena[float64](), "a", a, rows, steps, steps, nil, nil, true)
	want := make([]float64, rows*steps*a.OutDim)
	whole.Forward(w, x, x, want, false)
	k, v := make([]float64, rows*posCap*a.Width()), make([]float64, rows*posCap*a.Width())
	for t0 := 0; t0 < steps; t0++ {
		xt := make([]float64, rows*a.QueryDim)
		for r := 0; r < rows; r++ {
			copy(xt[r*a.QueryDim:(r+1)*a.QueryDim], x[(r*steps+t0)*a.QueryDim:])
		}
		step := &Cache[float64]{Attention: a, Rows: rows, Lq: 1, Lk: t0 + 1, Q: make([]float64, rows*a.Width()), Ctx: make([]float64, rows*a.Width()),
			K: k, V: v, LdK: a.Width(), KeyStride: posCap * a.Width(), Att: make([]float64, rows*a.Heads*(t0+1))}
		got := make([]float64, rows*a.OutDim)
		step.Forward(w, xt, xt, got, false)
		for r := 0; r < rows; r++ {
			gradcheck.Close(t, fmt.Sprintf("step %d row %d", t0, r), got[r*a.OutDim:(r+1)*a.OutDim], want[(r*steps+t0)*a.OutDim:][:a.OutDim], 1e-12)
		}
	}
}
