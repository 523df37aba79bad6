package kernels

import (
	"math"
	"math/rand/v2"
	"testing"
)

// bf16Go is a precision back-end of the output layer (OutputBackend) written in a test file, as a new one would
// start: the products' operands rounded to bfloat16 in plain Go, then multiplied in float32 on Gemm's BLAS. It is
// what AMXOutput computes in bfloat16, without tiles or packing.
type bf16Go struct{}

// Products returns the back-end itself: it keeps nothing from call to call.
func (bf16Go) Products(w []float32, in, v int) OutputProducts[float32] { return bf16Go{} }

// Logits sets g = xc w, both rounded.
func (bf16Go) Logits(xc, w, g []float32, rows, in, v int) {
	gemmProducts[float32]{}.Logits(roundedBF16(xc), roundedBF16(w), g, rows, in, v)
}

// Backward adds xcᵀ g to dw and sets dx = g wᵀ, every operand rounded.
func (bf16Go) Backward(xc, w, g, dw, dx []float32, rows, in, v int) {
	gemmProducts[float32]{}.Backward(roundedBF16(xc), roundedBF16(w), roundedBF16(g), dw, dx, rows, in, v)
}

// roundedBF16 returns a copy of x rounded to bfloat16.
func roundedBF16(x []float32) []float32 {
	r := make([]float32, len(x))
	for i, v := range x {
		r[i] = FromBF16(ToBF16(v))
	}
	return r
}

// TestOutputBackendInATestFile gives OutputXent the back-end above and requires of it what TestOutputXentInBF16
// requires of AMXOutput's bfloat16 products: its loss and gradients within float32's summation (and G's rounding)
// of the float64 computation whose products take their terms rounded to bfloat16, and other figures than float32
// products give (its products did run).
func TestOutputBackendInATestFile(t *testing.T) {
	c := newXentAMXCase(rand.New(rand.NewPCG(9, 10)))
	bf16 := func(v float64) float64 { return float64(FromBF16(ToBF16(float32(v)))) }
	wantLoss, wantDx, wantDw, wantDb, absDx, absDw := c.reference(bf16)
	loss, dx, dw, db := c.run(bf16Go{})
	if d := math.Abs(loss - wantLoss); d > 1e-5*math.Abs(wantLoss) {
		t.Fatalf("loss %.9g, the rounded terms give %.9g", loss, wantLoss)
	}
	requireXentFigures(t, "", false, dx, dw, db, wantDx, wantDw, wantDb, absDx, absDw)
	if loss32, _, _, _ := c.run(nil); loss32 == loss {
		t.Fatalf("loss %.9g, as float32 products give", loss)
	}
}
