package kernels

import (
	"math"
	"math/rand/v2"
	"testing"
)

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
// (which packs the weights at every call) against bf16 products (AMXWeights) on weights packed once. Run it with
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
		w, err := NewAMXWeights(w, k, n)
		if err != nil {
			b.Fatal(err)
		}
		in, c := NewAMXInput(rows, k), make([]float32, w.OutputLen(rows))
		b.ResetTimer()
		for range b.N {
			in.Round(x, k, 0, rows)
			if err := w.Mul(in, rows, c, 0, w.Strips()); err != nil {
				b.Fatal(err)
			}
		}
		gflops(b)
	})
}
