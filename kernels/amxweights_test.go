package kernels

import (
	"math"
	"math/rand/v2"
	"sync"
	"testing"
)

// TestAMXWeightsMulMatchesRoundedSums multiplies inputs of odd shapes by weights packed once (AMXWeights, on
// AMX, on VDPBF16PS where AMX does not run, in plain Go without AVX512-BF16),
// rounding the input's rows in two ranges and multiplying the strips in two halves on two goroutines at once,
// as the decoder does, and checks every product against the float64 sum of the bfloat16-rounded terms to within
// float32 summation error, k·2^-24·Σ|x̃||w̃|. The same input then takes fewer rows with stale rows past them,
// whose products must not touch the real rows; c's values outside the strips asked for must be left alone.
func TestAMXWeightsMulMatchesRoundedSums(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, s := range []struct{ rows, k, n int }{{1, 1, 1}, {45, 70, 75}, {33, 640, 200}, {64, 1100, 40}, {100, 31, 33}} {
		x, wv := make([]float32, s.rows*s.k), make([]float32, s.k*s.n)
		for i := range x {
			x[i] = float32(rng.NormFloat64())
		}
		for i := range wv {
			wv[i] = float32(rng.NormFloat64() * 0.3)
		}
		w, err := NewAMXWeights(wv, s.k, s.n)
		if err != nil {
			t.Fatal(err)
		}
		in := NewAMXInput(s.rows, s.k)
		in.Round(x, s.k, 0, s.rows/2)
		in.Round(x, s.k, s.rows/2, s.rows)
		for _, rows := range []int{s.rows, (s.rows + 1) / 2} {
			c := make([]float32, w.OutputLen(rows))
			for i := range c {
				c[i] = -7
			}
			half := w.Strips() / 2
			var wg sync.WaitGroup
			for _, part := range [][2]int{{0, half}, {half, w.Strips()}} {
				wg.Add(1)
				go func() {
					defer wg.Done()
					if err := w.Mul(in, rows, c, part[0], part[1]); err != nil {
						t.Error(err)
					}
				}()
			}
			wg.Wait()
			gamma := float64(s.k+1) / (1 << 24)
			for i := 0; i < rows; i++ {
				for j := 0; j < w.Stride(); j++ {
					got := float64(c[i*w.Stride()+j])
					if j >= s.n {
						if got != 0 {
							t.Fatalf("%+v: padding column c[%d][%d] = %g, not 0", s, i, j, got)
						}
						continue
					}
					var sum, abs float64
					for l := 0; l < s.k; l++ {
						p := float64(FromBF16(ToBF16(x[i*s.k+l]))) * float64(FromBF16(ToBF16(wv[l*s.n+j])))
						sum += p
						abs += math.Abs(p)
					}
					if d := math.Abs(got - sum); d > gamma*abs+1e-30 {
						t.Fatalf("%+v rows %d: c[%d][%d] = %.9g, the rounded terms sum to %.9g", s, rows, i, j, got, sum)
					}
				}
			}
		}
		if err := w.Mul(in, s.rows+1, make([]float32, w.OutputLen(s.rows+1)), 0, 1); err == nil {
			t.Errorf("%+v: Mul of more rows than the input holds did not fail", s)
		}
	}
}
