package encoder

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/attend-nmt/attend/internal/gradcheck"
	"github.com/attend-nmt/attend/kernels"
)

// Tolerances of the fused LSTM direction's tests.
const (
	forwardTol64 = 1e-12 // float64 against the reference: summation order only
	forwardTol32 = 5e-5  // float32 against the float64 reference at H=512
	gradTol      = 1e-6  // relative gap to float64 central differences
)

// lstmSeqRef is the plain reference of LSTMSeq.Forward: every gate of every row written out with loops, rows
// past their length keeping their state.
func lstmSeqRef(x, inputW, hiddenW, bias []float64, lengths []int, steps, rows, in, hid int, reverse bool) (out, finalH, finalC []float64) {
	sigmoid := func(v float64) float64 { return 1 / (1 + math.Exp(-v)) }
	h, c := make([]float64, rows*hid), make([]float64, rows*hid)
	out = make([]float64, steps*rows*hid)
	for k := 0; k < steps; k++ {
		t := k
		if reverse {
			t = steps - 1 - k
		}
		for r := 0; r < rows; r++ {
			if t < lengths[r] {
				var gate [4][]float64
				for g := 0; g < 4; g++ {
					gate[g] = make([]float64, hid)
					for j := 0; j < hid; j++ {
						v := bias[g*hid+j]
						for i := 0; i < in; i++ {
							v += x[(t*rows+r)*in+i] * inputW[(g*in+i)*hid+j]
						}
						for i := 0; i < hid; i++ {
							v += h[r*hid+i] * hiddenW[(g*hid+i)*hid+j]
						}
						gate[g][j] = v
					}
				}
				for j := 0; j < hid; j++ {
					ig, fg, cg, og := sigmoid(gate[0][j]), sigmoid(gate[1][j]), math.Tanh(gate[2][j]), sigmoid(gate[3][j])
					c[r*hid+j] = fg*c[r*hid+j] + ig*cg
					h[r*hid+j] = og * math.Tanh(c[r*hid+j])
				}
			}
			copy(out[(t*rows+r)*hid:(t*rows+r+1)*hid], h[r*hid:(r+1)*hid])
		}
	}
	return out, h, c
}

type lstmCase struct {
	steps, rows, in, hid int
	lengths              []int
}

func (c lstmCase) inputs(rng *rand.Rand) (x, inputW, hiddenW, bias []float64) {
	scale := 1 / math.Sqrt(float64(c.hid))
	return gradcheck.Random(rng, c.steps*c.rows*c.in, 1), gradcheck.Random(rng, 4*c.in*c.hid, scale),
		gradcheck.Random(rng, 4*c.hid*c.hid, scale), gradcheck.Random(rng, 4*c.hid, scale)
}

func convert[T kernels.Float](x []float64) []T {
	out := make([]T, len(x))
	for i, v := range x {
		out[i] = T(v)
	}
	return out
}

func widen(x []float32) []float64 {
	out := make([]float64, len(x))
	for i, v := range x {
		out[i] = float64(v)
	}
	return out
}

func runLSTMSeq[T kernels.Float](c lstmCase, reverse bool, x, inputW, hiddenW, bias []float64) (out, finalH, finalC []T) {
	seq := NewLSTMSeq[T](c.steps, c.rows, c.in, c.hid, reverse, kernels.NewArena[T](), "t")
	out, finalH, finalC = make([]T, c.steps*c.rows*c.hid), make([]T, c.rows*c.hid), make([]T, c.rows*c.hid)
	seq.Forward(convert[T](x), convert[T](inputW), convert[T](hiddenW), convert[T](bias), c.lengths, out, finalH, finalC)
	return out, finalH, finalC
}

func TestLSTMSeqForwardMatchesReference(t *testing.T) {
	cases := map[string]lstmCase{
		"odd B=3 S=5 H=7": {steps: 5, rows: 3, in: 4, hid: 7, lengths: []int{5, 0, 3}},
		"H=512":           {steps: 3, rows: 2, in: 3, hid: 512, lengths: []int{3, 2}},
	}
	for name, c := range cases {
		for _, reverse := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s reverse=%v", name, reverse), func(t *testing.T) {
				x, inputW, hiddenW, bias := c.inputs(rand.New(rand.NewPCG(1, uint64(c.hid))))
				out, finalH, finalC := lstmSeqRef(x, inputW, hiddenW, bias, c.lengths, c.steps, c.rows, c.in, c.hid, reverse)
				o64, h64, c64 := runLSTMSeq[float64](c, reverse, x, inputW, hiddenW, bias)
				gradcheck.Close(t, "out (float64)", o64, out, forwardTol64)
				gradcheck.Close(t, "finalH (float64)", h64, finalH, forwardTol64)
				gradcheck.Close(t, "finalC (float64)", c64, finalC, forwardTol64)
				o32, h32, c32 := runLSTMSeq[float32](c, reverse, x, inputW, hiddenW, bias)
				gradcheck.Close(t, "out (float32)", widen(o32), out, forwardTol32)
				gradcheck.Close(t, "finalH (float32)", widen(h32), finalH, forwardTol32)
				gradcheck.Close(t, "finalC (float32)", widen(c32), finalC, forwardTol32)
			})
		}
	}
}

func TestLSTMSeqBackwardMatchesFiniteDifferences(t *testing.T) {
	c := lstmCase{steps: 5, rows: 3, in: 4, hid: 7, lengths: []int{5, 0, 3}}
	for _, reverse := range []bool{false, true} {
		t.Run(fmt.Sprintf("reverse=%v", reverse), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(2, 3))
			x, inputW, hiddenW, bias := c.inputs(rng)
			n := c.steps * c.rows * c.hid
			rOut, rH, rC := gradcheck.Random(rng, n, 1), gradcheck.Random(rng, c.rows*c.hid, 1), gradcheck.Random(rng, c.rows*c.hid, 1)
			seq := NewLSTMSeq[float64](c.steps, c.rows, c.in, c.hid, reverse, kernels.NewArena[float64](), "t")
			out, finalH, finalC := make([]float64, n), make([]float64, c.rows*c.hid), make([]float64, c.rows*c.hid)
			loss := func() float64 {
				seq.Forward(x, inputW, hiddenW, bias, c.lengths, out, finalH, finalC)
				return gradcheck.Dot(out, rOut) + gradcheck.Dot(finalH, rH) + gradcheck.Dot(finalC, rC)
			}
			loss()
			dx, dInputW, dHiddenW, dBias := make([]float64, len(x)), make([]float64, len(inputW)), make([]float64, len(hiddenW)), make([]float64, len(bias))
			seq.Backward(x, inputW, hiddenW, c.lengths, rOut, rH, rC, dx, dInputW, dHiddenW, dBias)
			gradcheck.Check(t, loss, []gradcheck.Tensor{
				{Name: "x", X: x, Grad: dx}, {Name: "inputW", X: inputW, Grad: dInputW},
				{Name: "hiddenW", X: hiddenW, Grad: dHiddenW}, {Name: "bias", X: bias, Grad: dBias},
			}, 40, rng, gradTol)
		})
	}
}
