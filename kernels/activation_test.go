package kernels

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestFloat32ActivationsMatchMath compares the float32 slice kernels with the math package on a dense sweep and
// on random values, odd lengths and unaligned sub-slices included.
func TestFloat32ActivationsMatchMath(t *testing.T) {
	var xs []float32
	for x := -110.0; x <= 100; x += 0.0137 {
		xs = append(xs, float32(x))
	}
	rng := rand.New(rand.NewPCG(1, 1))
	for i := 0; i < 10001; i++ {
		xs = append(xs, float32(rng.NormFloat64()*3))
	}
	xs = append(xs, 0, -0, 1e-30, -1e-30, float32(math.Inf(1)), float32(math.Inf(-1)))
	cases := []struct {
		name  string
		apply func([]float32)
		ref   func(float64) float64
		tol   float64 // relative, with an absolute floor of tol·1e-3
	}{
		{"exp", ExpSlice[float32], math.Exp, 4e-7},
		{"sigmoid", SigmoidSlice[float32], func(x float64) float64 { return 1 / (1 + math.Exp(-x)) }, 5e-7},
		{"tanh", TanhSlice[float32], math.Tanh, 5e-7},
	}
	for _, c := range cases {
		got := append([]float32(nil), xs...)
		c.apply(got[1:]) // an unaligned start and an odd length
		got[0] = xs[0]
		c.apply(got[:1])
		for i, x := range xs {
			want := c.ref(float64(x))
			g := float64(got[i])
			if math.IsInf(want, 0) || math.IsInf(g, 0) || want > math.MaxFloat32 {
				if float32(want) != got[i] {
					t.Fatalf("%s(%g) = %g, want %g", c.name, x, g, want)
				}
				continue
			}
			if err := math.Abs(g - want); err > c.tol*math.Max(math.Abs(want), 1e-3) && float32(want) != 0 {
				t.Fatalf("%s(%g) = %.9g, want %.9g (error %.3g)", c.name, x, g, want, err/math.Abs(want))
			}
		}
	}
	nan := []float32{float32(math.NaN())}
	for _, f := range []func([]float32){ExpSlice[float32], SigmoidSlice[float32], TanhSlice[float32]} {
		v := append([]float32(nil), nan...)
		f(v)
		if v[0] == v[0] {
			t.Fatalf("NaN in, %g out", v[0])
		}
	}
}

func TestFloat64ActivationsAreExact(t *testing.T) {
	xs := []float64{-3, -0.5, 0, 0.25, 7}
	e, s, th := append([]float64(nil), xs...), append([]float64(nil), xs...), append([]float64(nil), xs...)
	ExpSlice(e)
	SigmoidSlice(s)
	TanhSlice(th)
	for i, x := range xs {
		if e[i] != math.Exp(x) || s[i] != 1/(1+math.Exp(-x)) || th[i] != math.Tanh(x) {
			t.Fatalf("float64 activations differ from math at %g", x)
		}
	}
}

func BenchmarkExpSlice(b *testing.B) {
	xs := make([]float32, 6000)
	for i := range xs {
		xs[i] = float32(i%17) - 8
	}
	buf := make([]float32, len(xs))
	for i := 0; i < b.N; i++ {
		copy(buf, xs)
		ExpSlice(buf)
	}
	b.ReportMetric(float64(len(xs)*b.N)/b.Elapsed().Seconds()/1e9, "Gelem/s")
}
