package model

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestFillDropoutMask checks inverted-dropout masks of an odd length (so the last 64-bit draw is used by half):
// every value is 0 or 1/(1-p), and the share of zeros is p to within four binomial standard deviations, in the
// first and second half of each draw alike.
func TestFillDropoutMask(t *testing.T) {
	const n = 200_001
	rng := rand.New(rand.NewPCG(1, 2))
	mask := make([]float32, n)
	for _, p := range []float64{0.1, 0.2, 0.5} {
		fillDropoutMask(mask, p, rng)
		keep := float32(1 / (1 - p))
		var zeros [2]int
		for i, m := range mask {
			switch m {
			case 0:
				zeros[i%2]++
			case keep:
			default:
				t.Fatalf("p=%g: mask[%d] = %g, want 0 or %g", p, i, m, keep)
			}
		}
		for half, z := range zeros {
			count := float64(n/2 + (n%2)*(1-half))
			if sd := math.Sqrt(count * p * (1 - p)); math.Abs(float64(z)-p*count) > 4*sd {
				t.Errorf("p=%g: %d zeros among %.0f values of draw half %d, want %.0f ± %.0f", p, z, count, half, p*count, 4*sd)
			}
		}
	}
}

// BenchmarkFillDropoutMask times the masks of one Multi30k step of the "small" model: the output layer's
// (1024, 640) and the two (16, 64, 128) embedding masks.
func BenchmarkFillDropoutMask(b *testing.B) {
	mask := make([]float32, 1024*640+2*16*64*128)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < b.N; i++ {
		fillDropoutMask(mask, 0.2, rng)
	}
}
