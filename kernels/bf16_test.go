package kernels

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestBF16TileMatchesPlainSums multiplies a random matrix with an odd number of rows and a last panel of 4
// columns by 13 rows of input (a last tile of 5), and checks every sum against the float64 sum of the rounded
// terms to within float32 summation error, and against the unrounded terms to within the bound the decoder's
// rescoring relies on. Columns outside the panels asked for must be left alone. Where the CPU has AVX512-BF16 it
// checks the assembly kernel and the plain-Go one.
func TestBF16TileMatchesPlainSums(t *testing.T) {
	const k, n, rows = 37, 2*bf16PanelWidth + 4, 13
	rng := rand.New(rand.NewPCG(5, 6))
	w := make([]float32, k*n)
	for i := range w {
		w[i] = float32(rng.NormFloat64()) * 0.3
	}
	x := make([]float32, rows*k)
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	p := NewBF16Panels(w, k, n)
	if p.Panels() != 3 {
		t.Fatalf("%d panels, want 3", p.Panels())
	}
	x16 := make([]uint32, p.InputLen(rows))
	p.RoundInput(x16, x, k, 0, rows)
	kernelsToCheck := []string{"go"}
	if hasBF16 {
		kernelsToCheck = append(kernelsToCheck, "avx512-bf16")
	}
	gamma := 2 * float64(k) / (1 << 24)
	for _, kernel := range kernelsToCheck {
		c := make([]float32, rows*n)
		for i := range c {
			c[i] = -7
		}
		mul := func(first, last int) { p.Mul(rows, x16, c, n, first, last) }
		if kernel == "go" {
			mul = func(first, last int) { p.mulWith(false, rows, x16, c, n, first, last) }
		}
		mul(1, 3) // columns 48 … 99
		for r := 0; r < rows; r++ {
			for j := 0; j < n; j++ {
				got := float64(c[r*n+j])
				if j < bf16PanelWidth {
					if got != -7 {
						t.Fatalf("%s: c[%d][%d] = %g outside the panels asked for", kernel, r, j, got)
					}
					continue
				}
				var rounded, exact, abs float64
				for i := 0; i < k; i++ {
					xr, wr := float64(FromBF16(ToBF16(x[r*k+i]))), float64(FromBF16(ToBF16(w[i*n+j])))
					rounded += xr * wr
					exact += float64(x[r*k+i]) * float64(w[i*n+j])
					abs += math.Abs(float64(x[r*k+i]) * float64(w[i*n+j]))
				}
				if d := math.Abs(got - rounded); d > gamma*2*abs+1e-30 {
					t.Fatalf("%s: c[%d][%d] = %.9g, the rounded terms sum to %.9g (off by %.3g)", kernel, r, j, got, rounded, d)
				}
				if d := math.Abs(got - exact); d > (2*BF16RoundOff+BF16RoundOff*BF16RoundOff+2*gamma)*abs {
					t.Fatalf("%s: c[%d][%d] = %.9g, off the float32 terms' sum %.9g by %.3g, more than the bound", kernel, r, j, got, exact, d)
				}
			}
		}
	}
}

func TestToBF16RoundsToNearestEven(t *testing.T) {
	for _, c := range []struct {
		in   float32
		want float32
	}{
		{1, 1},
		{1 + 1.0/256, 1},           // a tie: to the even significand 1.0000000
		{1 + 3.0/256, 1 + 4.0/256}, // a tie: to the even 1.0000010
		{1 + 1.0/256 + 1.0/4096, 1 + 2.0/256},
		{-2.5, -2.5},
		{0, 0},
		{float32(math.Inf(1)), float32(math.Inf(1))},
	} {
		if got := FromBF16(ToBF16(c.in)); got != c.want {
			t.Errorf("bf16(%g) = %g, want %g", c.in, got, c.want)
		}
	}
}

// BenchmarkDecodeOutputLayer times greedy decoding's output-layer product at its real shape (128 rows: a batch
// of 64 per core, 640 inputs, 5,898 words: `small` on Multi30k) on one core: float32 Gemm on the active BLAS
// (which packs the weights at every call) against the bf16 kernel on weights packed once. Run it with
// OPENBLAS_NUM_THREADS=1 to compare one core with one core.
func BenchmarkDecodeOutputLayer(b *testing.B) {
	const rows, k, n = 128, 640, 5898
	rng := rand.New(rand.NewPCG(1, 1))
	x, w, c := make([]float32, rows*k), make([]float32, k*n), make([]float32, rows*n)
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	for i := range w {
		w[i] = float32(rng.NormFloat64() * 0.05)
	}
	gflops := func(b *testing.B) {
		b.ReportMetric(2*rows*k*n*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
	}
	b.Run("float32", func(b *testing.B) {
		for range b.N {
			Gemm(false, false, rows, n, k, 1, x, k, w, n, 0, c, n)
		}
		gflops(b)
	})
	b.Run("bf16", func(b *testing.B) {
		if !hasBF16 {
			b.Skip("no AVX512-BF16 on this CPU")
		}
		p := NewBF16Panels(w, k, n)
		x16 := make([]uint32, p.InputLen(rows))
		b.ResetTimer()
		for range b.N {
			p.RoundInput(x16, x, k, 0, rows)
			p.Mul(rows, x16, c, n, 0, p.Panels())
		}
		gflops(b)
	})
}
