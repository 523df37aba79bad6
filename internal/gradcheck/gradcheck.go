// Package gradcheck compares hand-written gradients with central finite differences in float64 and forward
// passes with plain references, for the tests of the fused ops; failures name the tensor, the worst index and
// the gap.
package gradcheck

import (
	"math"
	"math/rand/v2"
	"testing"
)

// Step is the finite-difference step: small enough for float64 central differences to be accurate to about
// 1e-9, large enough to stay clear of rounding.
const Step = 1e-6

// Tensor is one input of a loss, whose analytic gradient Grad (same length as X) is to be checked.
type Tensor struct {
	Name    string
	X, Grad []float64
}

// Check compares each tensor's Grad with (loss(x+Step) − loss(x−Step)) / 2·Step at up to n indices drawn from
// rng (every index when the tensor has at most n). The relative gap is |analytic − numeric| / max(|analytic|,
// |numeric|, 1e-3); above tol the test fails with the worst index of the tensor. loss must read the tensors'
// X each time it runs; X is restored after each probe.
func Check(t testing.TB, loss func() float64, tensors []Tensor, n int, rng *rand.Rand, tol float64) {
	t.Helper()
	for _, ten := range tensors {
		if len(ten.X) != len(ten.Grad) {
			t.Fatalf("gradcheck: %s has %d values and a gradient of %d", ten.Name, len(ten.X), len(ten.Grad))
		}
		idx := make([]int, 0, n)
		if len(ten.X) <= n {
			for i := range ten.X {
				idx = append(idx, i)
			}
		} else {
			for range n {
				idx = append(idx, rng.IntN(len(ten.X)))
			}
		}
		worst, worstAt := -1.0, -1
		var worstGot, worstWant float64
		for _, i := range idx {
			orig := ten.X[i]
			ten.X[i] = orig + Step
			up := loss()
			ten.X[i] = orig - Step
			down := loss()
			ten.X[i] = orig
			numeric := (up - down) / (2 * Step)
			got := ten.Grad[i]
			rel := math.Abs(got-numeric) / math.Max(math.Max(math.Abs(got), math.Abs(numeric)), 1e-3)
			if rel > worst {
				worst, worstAt, worstGot, worstWant = rel, i, got, numeric
			}
		}
		if worst > tol {
			t.Errorf("%s: worst at index %d: backward %.10g, finite differences %.10g (relative gap %.2g > %.2g)",
				ten.Name, worstAt, worstGot, worstWant, worst, tol)
		}
	}
}

// Close fails the test when got and want differ anywhere by more than tol (absolute, scaled by max(1, |want|)),
// naming the worst index and both values.
func Close[T ~float32 | ~float64](t testing.TB, name string, got, want []T, tol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", name, len(got), len(want))
	}
	worst, at := -1.0, -1
	for i := range got {
		gap := math.Abs(float64(got[i])-float64(want[i])) / math.Max(1, math.Abs(float64(want[i])))
		if gap > worst || math.IsNaN(gap) {
			worst, at = gap, i
			if math.IsNaN(gap) {
				break
			}
		}
	}
	if at >= 0 && !(worst <= tol) {
		t.Errorf("%s: worst at index %d: %.10g, reference %.10g (gap %.2g > %.2g)", name, at, got[at], want[at], worst, tol)
	}
}

// Random fills a new slice of n values drawn from N(0, scale²).
func Random(rng *rand.Rand, n int, scale float64) []float64 {
	x := make([]float64, n)
	for i := range x {
		x[i] = scale * rng.NormFloat64()
	}
	return x
}

// Dot is Σ a_i b_i: the loss Σ out ⊙ R of a random projection R, whose gradient with respect to out is R.
func Dot(a, b []float64) float64 {
	var s float64
	for i := range a {
		s += a[i] * b[i]
	}
	return s
}
