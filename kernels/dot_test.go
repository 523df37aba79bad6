package kernels

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestDotF64MatchesPlainSum checks DotF64 against a plain float64 loop for lengths around the kernel's 16 (none,
// fewer, exactly, a tail) and the decoder's 640, to within float64 rounding of the additions: the products are
// exact, so any lane that lost or doubled a term would show far beyond it.
func TestDotF64MatchesPlainSum(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{0, 1, 15, 16, 17, 33, 640, 1001} {
		x, w := make([]float32, n+3), make([]float32, n) // x longer than w: only len(w) terms count
		for i := range x {
			x[i] = float32(rng.NormFloat64())
		}
		for i := range w {
			w[i] = float32(rng.NormFloat64())
		}
		var want, abs float64
		for i := range w {
			p := float64(x[i]) * float64(w[i])
			want += p
			abs += math.Abs(p)
		}
		got := DotF64(x, w)
		if d := math.Abs(got - want); d > 2*float64(n+1)*abs/(1<<53) {
			t.Fatalf("n %d: DotF64 %.17g, plain sum %.17g", n, got, want)
		}
	}
}
