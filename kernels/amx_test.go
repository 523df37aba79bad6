package kernels

import (
	"math"
	"math/rand/v2"
	"testing"
)

// skipWithoutAMX skips t where the CPU has no AMX-BF16 or Linux refuses the process the tile registers, saying
// which.
func skipWithoutAMX(t testing.TB) {
	if err := amxPermit(); err != nil {
		t.Skipf("no AMX here: %v", err)
	}
}

// TestAMXMulMatchesRoundedSums multiplies random matrices of odd shapes (rows, columns and k's not whole 16s or
// 32s, and shapes of exactly one block) on the tile registers, a and b row-major or transposed, and checks every
// sum against the float64 sum of the bfloat16-rounded terms to within float32 summation error, k·2^-24·Σ|ã||b̃|.
// Values of c outside the product (a wider ldc) must be left alone.
func TestAMXMulMatchesRoundedSums(t *testing.T) {
	skipWithoutAMX(t)
	rng := rand.New(rand.NewPCG(3, 4))
	for _, s := range []struct {
		m, k, n    int
		aT, bT     bool
		ldcPadding int
	}{
		{1, 1, 1, false, false, 0},
		{32, 32, 32, false, false, 0},
		{45, 70, 75, false, false, 3},
		{33, 31, 17, true, false, 0},
		{64, 97, 96, false, true, 5},
		{79, 200, 141, true, true, 1},
		{13, 640, 59, false, false, 0},
	} {
		m, k, n := s.m, s.k, s.n
		x, w := make([]float32, m*k), make([]float32, k*n)
		for i := range x {
			x[i] = float32(rng.NormFloat64())
		}
		for i := range w {
			w[i] = float32(rng.NormFloat64() * 0.3)
		}
		a, b := newAMXA(m, k), newAMXB(k, n)
		xr, xc := k, 1 // x holds a row-major, or aᵀ row-major when aT
		if s.aT {
			xr, xc = 1, m
		}
		wr, wc := n, 1
		if s.bT {
			wr, wc = 1, k
		}
		a.round(x, xr, xc)
		b.round(w, wr, wc)
		ldc := n + s.ldcPadding
		c := make([]float32, m*ldc)
		for i := range c {
			c[i] = -7
		}
		if err := amxMul(a, b, c, ldc); err != nil {
			t.Fatal(err)
		}
		gamma := float64(k) / (1 << 24)
		var worst float64
		for i := 0; i < m; i++ {
			for j := 0; j < ldc; j++ {
				got := float64(c[i*ldc+j])
				if j >= n {
					if got != -7 {
						t.Fatalf("%+v: c[%d][%d] = %g outside the product", s, i, j, got)
					}
					continue
				}
				var sum, abs float64
				for l := 0; l < k; l++ {
					p := float64(FromBF16(ToBF16(x[i*xr+l*xc]))) * float64(FromBF16(ToBF16(w[l*wr+j*wc])))
					sum += p
					abs += math.Abs(p)
				}
				d := math.Abs(got - sum)
				if d > gamma*abs+1e-30 {
					t.Fatalf("%+v: c[%d][%d] = %.9g, the rounded terms sum to %.9g (off by %.3g, %.3g of Σ|ãb̃|)", s, i, j, got, sum, d, d/abs)
				}
				worst = max(worst, d/abs)
			}
		}
		t.Logf("%+v: worst error %.3g of Σ|ãb̃| (bound %.3g)", s, worst, gamma)
	}
}

// TestAMXMulRefusesMismatchedShapes checks that amxMul reports inner dimensions that differ and a c too short.
func TestAMXMulRefusesMismatchedShapes(t *testing.T) {
	if err := amxMul(newAMXA(3, 4), newAMXB(5, 6), make([]float32, 18), 6); err == nil {
		t.Error("(3, 4) by (5, 6) accepted")
	}
	if err := amxMul(newAMXA(3, 4), newAMXB(4, 6), make([]float32, 17), 6); err == nil {
		t.Error("17 values of c accepted for (3, 6)")
	}
}
