package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
)

// TestAMXGemmMatchesFloat64 packs weights of odd shapes, row-major and as a transpose, rounded and split, and
// checks products with a wider ldx and ldc, set and added, against float64: within float32's summation of the
// rounded (or split) terms of exact ones, the same bounds as TestAMXMulMatchesRoundedSums's, with values of c
// outside the product left alone. One AMXGemm packs every shape in turn, so stale storage would show.
func TestAMXGemmMatchesFloat64(t *testing.T) {
	skipWithoutAMX(t)
	g := &AMXGemm{}
	rng := rand.New(rand.NewPCG(5, 6))
	for _, s := range []struct {
		m, k, n    int
		transposed bool
	}{{32, 640, 1024, false}, {32, 1024, 640, true}, {7, 33, 50, false}, {45, 129, 17, true}, {1, 1, 1, false}} {
		for _, split := range []bool{false, true} {
			for _, add := range []bool{false, true} {
				name := fmt.Sprintf("%+v split=%v add=%v", s, split, add)
				m, k, n, ldx, ldc := s.m, s.k, s.n, s.k+3, s.n+2
				x, w, c := make([]float32, m*ldx), make([]float32, k*n), make([]float32, m*ldc)
				for i := range x {
					x[i] = float32(rng.NormFloat64())
				}
				for i := range w {
					w[i] = float32(rng.NormFloat64() * 0.1)
				}
				for i := range c {
					c[i] = 0.5
				}
				at := func(i, j int) float32 { return w[i*n+j] } // the weights' element (i, j)
				if s.transposed {
					at = func(i, j int) float32 { return w[j*k+i] }
				}
				g.Pack(w, k, n, s.transposed, split)
				g.Mul(x, m, ldx, c, ldc, add)
				bound := float64(k+1) / (1 << 24) // float32 summation
				if split {
					bound = 3.0/(1<<17) + float64(3*k+1)/(1<<24)
				} else {
					bound += 2.0 / (1 << 8) // each term's two roundings
				}
				for i := 0; i < m; i++ {
					for j := 0; j < ldc; j++ {
						got := float64(c[i*ldc+j])
						if j >= n {
							if got != 0.5 {
								t.Fatalf("%s: c[%d][%d] = %g outside the product", name, i, j, got)
							}
							continue
						}
						sum, abs := 0.0, 0.0
						if add {
							sum, abs = 0.5, 0.5
						}
						for l := 0; l < k; l++ {
							p := float64(x[i*ldx+l]) * float64(at(l, j))
							sum += p
							abs += math.Abs(p)
						}
						if d := math.Abs(got - sum); d > bound*abs {
							t.Fatalf("%s: c[%d][%d] = %.9g, x·w = %.9g (off by %.3g of Σ|xw|, bound %.3g)", name, i, j, got, sum, d/abs, bound)
						}
					}
				}
			}
		}
	}
}

// BenchmarkAMXGemm times a decoder step's products at training's shapes on one goroutine — 32 rows (a core's
// share of a 64-pair batch) of [embedding; context; state] (640) by the LSTM's gate weights (640, 1,024), and the
// backward product by their transpose — as float32 Gemm on the active BLAS (-tags openblas and
// OPENBLAS_NUM_THREADS=1 for one core of OpenBLAS) and as AMXGemm rounded and split (bfloat16x3), the weights
// packed once outside the timing, as training packs them once a step for every time step.
func BenchmarkAMXGemm(b *testing.B) {
	for _, s := range []struct {
		name       string
		m, k, n    int
		transposed bool
	}{{"forward", 32, 640, 1024, false}, {"backward", 32, 1024, 640, true}} {
		rng := rand.New(rand.NewPCG(1, 2))
		x, w, c := make([]float32, s.m*s.k), make([]float32, s.k*s.n), make([]float32, s.m*s.n)
		for i := range x {
			x[i] = float32(rng.NormFloat64())
		}
		for i := range w {
			w[i] = float32(rng.NormFloat64() * 0.1)
		}
		gflops := func(b *testing.B) {
			b.ReportMetric(2*float64(s.m*s.n*s.k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		}
		b.Run(s.name+"/gemm", func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				if s.transposed {
					Gemm(false, true, s.m, s.n, s.k, 1, x, s.k, w, s.k, 0, c, s.n)
				} else {
					Gemm(false, false, s.m, s.n, s.k, 1, x, s.k, w, s.n, 0, c, s.n)
				}
			}
			gflops(b)
		})
		for _, split := range []bool{false, true} {
			b.Run(fmt.Sprintf("%s/amx-split=%v", s.name, split), func(b *testing.B) {
				if err := amxPermit(); err != nil {
					b.Skip(err)
				}
				g := &AMXGemm{}
				g.Pack(w, s.k, s.n, s.transposed, split)
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					g.Mul(x, s.m, s.k, c, s.n, false)
				}
				gflops(b)
			})
			b.Run(fmt.Sprintf("%s/pack-split=%v", s.name, split), func(b *testing.B) {
				if err := amxPermit(); err != nil {
					b.Skip(err)
				}
				g := &AMXGemm{}
				for i := 0; i < b.N; i++ {
					g.Pack(w, s.k, s.n, s.transposed, split)
				}
			})
		}
	}
}

// TestAMXGemmsShareTheWeights packs weights in the AMXGemms of one name of two workers' Multipliers (made
// together, NewMultipliers), at once on two goroutines, each from its own copy of the weights, and multiplies each
// worker's rows: the products must equal an AMXGemm of its own's bit for bit, with one packing between the two
// (the second Pack finds the weights packed). After the weights change, WeightsChanged must have the next Pack
// pack them afresh; without it the old packing stays, which the test checks too.
func TestAMXGemmsShareTheWeights(t *testing.T) {
	skipWithoutAMX(t)
	const m, k, n = 40, 70, 96
	rng := rand.New(rand.NewPCG(31, 32))
	muls, err := NewMultipliers(Products{format: BF16x3, amx: true}, 2)
	if err != nil {
		t.Fatal(err)
	}
	var gemms [2]*AMXGemm
	for i := range gemms {
		gemms[i] = muls[i].AMXGemm("w")
	}
	if gemms[0].shared == nil || gemms[0].shared != gemms[1].shared {
		t.Fatal("the workers' AMXGemms of one name do not share a packing")
	}
	w := normals(rng, k*n, 1)
	x := [2][]float32{normals(rng, m*k, 1), normals(rng, m*k, 1)}
	run := func() [2][]float32 {
		var got [2][]float32
		var wg sync.WaitGroup
		for i := range gemms {
			wg.Add(1)
			go func() {
				defer wg.Done()
				gemms[i].Pack(slices.Clone(w), k, n, false, true)
				got[i] = make([]float32, m*n)
				gemms[i].Mul(x[i], m, k, got[i], n, false)
			}()
		}
		wg.Wait()
		return got
	}
	own := func(w []float32, i int) []float32 {
		g := &AMXGemm{}
		g.Pack(w, k, n, false, true)
		c := make([]float32, m*n)
		g.Mul(x[i], m, k, c, n, false)
		return c
	}
	check := func(when string, got [2][]float32, w []float32) {
		t.Helper()
		for i := range got {
			if !slices.Equal(got[i], own(w, i)) {
				t.Fatalf("%s: worker %d's product differs from an AMXGemm of its own's", when, i)
			}
		}
	}
	check("first packing", run(), w)
	old := slices.Clone(w)
	for j := range w {
		w[j] *= 1.5
	}
	check("without WeightsChanged, the old packing", run(), old)
	muls[1].Output.WeightsChanged()
	check("after WeightsChanged", run(), w)
}
