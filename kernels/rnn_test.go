package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/attend-nmt/attend/internal/gradcheck"
)

// Tolerances of the recurrent cells' tests.
const (
	cellForwardTol = 1e-14 // float64 against the formula: the same operations
	cellGradTol    = 1e-5  // relative gap to float64 central differences (a loss summed over 1,024 values)
)

func sigmoidRef(x float64) float64 { return 1 / (1 + math.Exp(-x)) }

// lstmRef is LSTMForward written out: c = σ(f)·cPrev + σ(i)·tanh(g), h = σ(o)·tanh(c).
func lstmRef(gates, cPrev []float64, rows, hid int) (h, c []float64) {
	h, c = make([]float64, rows*hid), make([]float64, rows*hid)
	for r := 0; r < rows; r++ {
		for j := 0; j < hid; j++ {
			at := func(g int) float64 { return gates[r*4*hid+g*hid+j] }
			c[r*hid+j] = sigmoidRef(at(GateF))*cPrev[r*hid+j] + sigmoidRef(at(GateI))*math.Tanh(at(GateG))
			h[r*hid+j] = sigmoidRef(at(GateO)) * math.Tanh(c[r*hid+j])
		}
	}
	return h, c
}

// gruRef is GRUForward written out.
func gruRef(gx, gh, hPrev []float64, rows, hid int) []float64 {
	h := make([]float64, rows*hid)
	for r := 0; r < rows; r++ {
		for j := 0; j < hid; j++ {
			at := func(x []float64, g int) float64 { return x[r*3*hid+g*hid+j] }
			rg := sigmoidRef(at(gx, GateR) + at(gh, GateR))
			zg := sigmoidRef(at(gx, GateZ) + at(gh, GateZ))
			ng := math.Tanh(at(gx, GateN) + rg*at(gh, GateN))
			h[r*hid+j] = (1-zg)*ng + zg*hPrev[r*hid+j]
		}
	}
	return h
}

var cellSizes = []struct{ rows, hid int }{{3, 5}, {2, 512}}

func TestLSTMForwardMatchesFormulaAndKeepsNothingWithoutCache(t *testing.T) {
	for _, sz := range cellSizes {
		t.Run(fmt.Sprintf("B=%d H=%d", sz.rows, sz.hid), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, uint64(sz.hid)))
			gates, cPrev := gradcheck.Random(rng, sz.rows*4*sz.hid, 1.5), gradcheck.Random(rng, sz.rows*sz.hid, 1)
			wantH, wantC := lstmRef(gates, cPrev, sz.rows, sz.hid)
			for _, keep := range []bool{false, true} {
				g, h, c := append([]float64(nil), gates...), make([]float64, len(cPrev)), make([]float64, len(cPrev))
				var tanhC []float64
				if keep {
					tanhC = make([]float64, len(cPrev))
				}
				LSTMForward(g, cPrev, sz.rows, sz.hid, h, c, tanhC)
				gradcheck.Close(t, fmt.Sprintf("h (cache %v)", keep), h, wantH, cellForwardTol)
				gradcheck.Close(t, fmt.Sprintf("c (cache %v)", keep), c, wantC, cellForwardTol)
				for i, v := range tanhC {
					if v != math.Tanh(c[i]) {
						t.Fatalf("tanhC[%d] = %g, tanh(c) = %g", i, v, math.Tanh(c[i]))
					}
				}
			}
		})
	}
}

// TestLSTMBackwardMatchesFiniteDifferences differentiates Σ R₁ ⊙ h + Σ R₂ ⊙ c through LSTMForward by hand and by
// central differences, with respect to the pre-activations and the previous cell state.
func TestLSTMBackwardMatchesFiniteDifferences(t *testing.T) {
	for _, sz := range cellSizes {
		t.Run(fmt.Sprintf("B=%d H=%d", sz.rows, sz.hid), func(t *testing.T) {
			rows, hid := sz.rows, sz.hid
			rng := rand.New(rand.NewPCG(2, uint64(hid)))
			gates, cPrev := gradcheck.Random(rng, rows*4*hid, 1.5), gradcheck.Random(rng, rows*hid, 1)
			rh, rc := gradcheck.Random(rng, rows*hid, 1), gradcheck.Random(rng, rows*hid, 1)
			h, c, tanhC := make([]float64, rows*hid), make([]float64, rows*hid), make([]float64, rows*hid)
			act := make([]float64, len(gates))
			loss := func() float64 {
				copy(act, gates)
				LSTMForward(act, cPrev, rows, hid, h, c, tanhC)
				return gradcheck.Dot(h, rh) + gradcheck.Dot(c, rc)
			}
			loss()
			dGates, dc := make([]float64, len(gates)), append([]float64(nil), rc...)
			LSTMBackward(act, tanhC, cPrev, rh, dc, rows, hid, dGates)
			gradcheck.Check(t, loss, []gradcheck.Tensor{{Name: "gates", X: gates, Grad: dGates}, {Name: "cPrev", X: cPrev, Grad: dc}},
				40, rng, cellGradTol)
		})
	}
}

func TestGRUForwardMatchesFormula(t *testing.T) {
	for _, sz := range cellSizes {
		t.Run(fmt.Sprintf("B=%d H=%d", sz.rows, sz.hid), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(3, uint64(sz.hid)))
			n := sz.rows * 3 * sz.hid
			gx, gh, hPrev := gradcheck.Random(rng, n, 1.5), gradcheck.Random(rng, n, 1.5), gradcheck.Random(rng, sz.rows*sz.hid, 1)
			want := gruRef(gx, gh, hPrev, sz.rows, sz.hid)
			for _, act := range [][]float64{nil, make([]float64, n)} {
				h := make([]float64, len(hPrev))
				GRUForward(gx, gh, hPrev, sz.rows, sz.hid, h, act)
				gradcheck.Close(t, fmt.Sprintf("h (cache %v)", act != nil), h, want, cellForwardTol)
			}
		})
	}
}

// TestGRUBackwardMatchesFiniteDifferences differentiates Σ R ⊙ h through GRUForward by hand and by central
// differences, with respect to both parts of the pre-activations and the previous state.
func TestGRUBackwardMatchesFiniteDifferences(t *testing.T) {
	for _, sz := range cellSizes {
		t.Run(fmt.Sprintf("B=%d H=%d", sz.rows, sz.hid), func(t *testing.T) {
			rows, hid := sz.rows, sz.hid
			rng := rand.New(rand.NewPCG(4, uint64(hid)))
			n := rows * 3 * hid
			gx, gh, hPrev := gradcheck.Random(rng, n, 1.5), gradcheck.Random(rng, n, 1.5), gradcheck.Random(rng, rows*hid, 1)
			rh := gradcheck.Random(rng, rows*hid, 1)
			h, act := make([]float64, rows*hid), make([]float64, n)
			loss := func() float64 {
				GRUForward(gx, gh, hPrev, rows, hid, h, act)
				return gradcheck.Dot(h, rh)
			}
			loss()
			dgx, dgh, dh := make([]float64, n), make([]float64, n), append([]float64(nil), rh...)
			GRUBackward(act, gh, hPrev, dh, rows, hid, dgx, dgh)
			gradcheck.Check(t, loss, []gradcheck.Tensor{{Name: "gx", X: gx, Grad: dgx}, {Name: "gh", X: gh, Grad: dgh}, {Name: "hPrev", X: hPrev, Grad: dh}},
				40, rng, cellGradTol)
		})
	}
}
