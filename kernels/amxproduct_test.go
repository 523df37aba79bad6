package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// TestAMXProductMatchesFloat64 adds aᵀ·b into a c of random values on odd shapes (m, n and k not whole 32s, k = 1)
// with wider leading dimensions, split (bfloat16x3), whole (MulTN) and by blocks of columns as a layer's gates
// take them (RoundB once, RoundA, AddTo per block; blocks of 24 columns start off a whole 32 and go through
// scratch), and checks every sum against float64 within TestOutputXentInBF16x3's bound for bfloat16x3, 1e-7 +
// 4·2^-17·Σ|terms| (c's own value a term), with values of c outside the product left alone. It also checks that
// the result differs from float32 Gemm's somewhere, so that AMX really ran. One AMXProduct takes every shape in
// turn, so stale storage would show.
func TestAMXProductMatchesFloat64(t *testing.T) {
	skipWithoutAMX(t)
	p := &AMXProduct{split: true}
	rng := rand.New(rand.NewPCG(41, 42))
	for _, s := range []struct{ m, n, k, block int }{
		{45, 50, 33, 0}, {7, 17, 1, 0}, {64, 96, 437, 0}, {33, 130, 70, 0}, {40, 96, 61, 24}, {37, 128, 300, 32}, {1, 1, 1, 0},
	} {
		name := fmt.Sprintf("%+v", s)
		m, n, k := s.m, s.n, s.k
		lda, ldb, ldc := m+3, n+5, n+2
		a, b, c := normals(rng, k*lda, 1), normals(rng, k*ldb, 0.1), normals(rng, m*ldc, 1)
		c0 := append([]float32(nil), c...)
		if s.block == 0 {
			p.RoundB(n, k, b, ldb)
			p.RoundA(m, k, a, lda)
			p.AddTo(0, n, c, ldc)
		} else {
			p.RoundB(n, k, b, ldb)
			p.RoundA(m, k, a, lda)
			for j0 := 0; j0 < n; j0 += s.block {
				p.AddTo(j0, j0+s.block, c[j0:], ldc)
			}
		}
		f32 := append([]float32(nil), c0...)
		Gemm(true, false, m, n, k, 1, a, lda, b, ldb, 1, f32, ldc)
		differs := false
		for i := 0; i < m; i++ {
			for j := 0; j < ldc; j++ {
				got := c[i*ldc+j]
				if j >= n {
					if got != c0[i*ldc+j] {
						t.Fatalf("%s: c[%d][%d] = %g outside the product, was %g", name, i, j, got, c0[i*ldc+j])
					}
					continue
				}
				sum, abs := float64(c0[i*ldc+j]), math.Abs(float64(c0[i*ldc+j]))
				for l := 0; l < k; l++ {
					term := float64(a[l*lda+i]) * float64(b[l*ldb+j])
					sum += term
					abs += math.Abs(term)
				}
				if d, tol := math.Abs(float64(got)-sum), 1e-7+abs*4/(1<<17); d > tol {
					t.Fatalf("%s: c[%d][%d] = %.9g, c + aᵀb = %.9g (off by %.3g, bound %.3g)", name, i, j, got, sum, d, tol)
				}
				differs = differs || got != f32[i*ldc+j]
			}
		}
		if !differs && k > 1 {
			t.Errorf("%s: the product equals float32 Gemm's bit for bit: did AMX run?", name)
		}
	}
}

// TestMultiplierAMXProduct checks that a Multiplier hands out an AMXProduct only where its products are
// bfloat16x3, one for each name.
func TestMultiplierAMXProduct(t *testing.T) {
	skipWithoutAMX(t)
	if (*Multiplier)(nil).AMXProduct("w") != nil {
		t.Error("a nil Multiplier gives an AMXProduct")
	}
	for _, format := range []Format{Float32, BF16, BF16x3} {
		muls, err := NewMultipliers(Products{format: format, amx: format != Float32}, 1)
		if err != nil {
			t.Fatal(err)
		}
		m, split := muls[0], format == BF16x3
		p := m.AMXProduct("w")
		if (p != nil) != split {
			t.Fatalf("%v: AMXProduct gives %v", format, p)
		}
		if split && (!p.split || m.AMXProduct("w") != p || m.AMXProduct("v") == p) {
			t.Error("the Multiplier's AMXProducts are not split, one for each name")
		}
	}
}

// BenchmarkAMXProduct times the recurrent layers' weight-gradient products at the "small" model's shapes on one
// goroutine, a worker's 32 rows of a Multi30k batch (about 14 steps: k = 437 rows): the decoder's dW += [x; s]ᵀ·dG
// ([emb; context] 384 and state 256 wide, 4 gates of 256) and an encoder direction's (emb 128 and state 128 wide,
// 4 gates of 128). "gemm" is float32 Gemm on the active BLAS (-tags openblas and OPENBLAS_NUM_THREADS=1 for one
// core of OpenBLAS), gate by gate as the layers ran it; "amx" AMXProduct split (bfloat16x3) with b rounded once
// and each gate's block of columns added where it lies (AddTo); "amx-whole" the whole product (input and state
// rows, every gate) into scratch by MulTN, then added into the gates' blocks.
func BenchmarkAMXProduct(b *testing.B) {
	for _, s := range []struct {
		name             string
		k, in, hid, gate int
	}{{"decoder", 437, 384, 256, 256}, {"encoder", 437, 128, 128, 128}} {
		rng := rand.New(rand.NewPCG(1, 2))
		gi, gw := s.in+s.hid, 4*s.gate
		x, dG := normals(rng, s.k*gi, 1), normals(rng, s.k*gw, 0.1)
		dIn, dHid := make([]float32, s.in*gw), make([]float32, s.hid*gw)
		gflops := func(b *testing.B) {
			b.ReportMetric(2*float64(s.k*gi*gw)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		}
		h := s.gate
		b.Run(s.name+"/gemm", func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				for g := 0; g < 4; g++ {
					Gemm(true, false, s.in, h, s.k, 1, x, gi, dG[g*h:], gw, 1, dIn[g*s.in*h:], h)
					Gemm(true, false, s.hid, h, s.k, 1, x[s.in:], gi, dG[g*h:], gw, 1, dHid[g*s.hid*h:], h)
				}
			}
			gflops(b)
		})
		b.Run(s.name+"/amx", func(b *testing.B) {
			if err := amxPermit(); err != nil {
				b.Skip(err)
			}
			p := &AMXProduct{split: true}
			for i := 0; i < b.N; i++ {
				p.RoundB(gw, s.k, dG, gw)
				p.RoundA(s.in, s.k, x, gi)
				for g := 0; g < 4; g++ {
					p.AddTo(g*h, (g+1)*h, dIn[g*s.in*h:], h)
				}
				p.RoundA(s.hid, s.k, x[s.in:], gi)
				for g := 0; g < 4; g++ {
					p.AddTo(g*h, (g+1)*h, dHid[g*s.hid*h:], h)
				}
			}
			gflops(b)
		})
		b.Run(s.name+"/amx-whole", func(b *testing.B) {
			if err := amxPermit(); err != nil {
				b.Skip(err)
			}
			p := &AMXProduct{split: true}
			whole := make([]float32, gi*gw)
			for i := 0; i < b.N; i++ {
				clear(whole)
				p.RoundB(gw, s.k, dG, gw)
				p.RoundA(gi, s.k, x, gi)
				p.AddTo(0, gw, whole, gw)
				for r := 0; r < gi; r++ {
					dst, at := dIn, r
					if r >= s.in {
						dst, at = dHid, r-s.in
					}
					rows := len(dst) / gw
					for g := 0; g < 4; g++ {
						row := dst[g*rows*h+at*h : g*rows*h+(at+1)*h]
						for j, v := range whole[r*gw+g*h : r*gw+(g+1)*h] {
							row[j] += v
						}
					}
				}
			}
			gflops(b)
		})
	}
}
