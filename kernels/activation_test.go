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
	xs = append(xs, 0, -0, 1e-30, -1e-30, float32(math.Inf(1)), float32(math.Inf(-1)), 88.3, -87.3)
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
			if c.name == "exp" && (x > 88.377 || x < -87.337) {
				// Out of the normal float32 range the vector exp saturates: ≈2.4e38 above, ≈1.2e-38 below.
				if (x > 0 && g < 2.4e38) || (x < 0 && g > 1.2e-38) {
					t.Fatalf("exp(%g) = %g, want saturation", x, g)
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

// TestVectorKernelsMatchScalar compares the assembly kernels (exp, tanh) with expf and tanhf lane by lane,
// over lengths 0..40 and unaligned starts, where the CPU has AVX2.
func TestVectorKernelsMatchScalar(t *testing.T) {
	if !hasAVX2FMA {
		t.Skip("no AVX2+FMA on this CPU: the pure-Go expf and tanhf are the only path")
	}
	for _, k := range []struct {
		name   string
		vector func([]float32) int
		scalar func(float32) float32
		scale  float64 // of the normal inputs
	}{
		{"exp", vectorExp, expf, 20},
		{"tanh", vectorTanh, tanhf, 2},
	} {
		rng := rand.New(rand.NewPCG(2, 2))
		for n := 0; n <= 40; n++ {
			for start := 0; start < 3; start++ {
				xs := make([]float32, start+n)
				for i := range xs {
					xs[i] = float32(rng.NormFloat64() * k.scale)
				}
				got := append([]float32(nil), xs...)
				done := k.vector(got[start:])
				if done != n&^7 {
					t.Fatalf("%s, n=%d: vector kernel did %d values, want %d", k.name, n, done, n&^7)
				}
				for i := start; i < start+n; i++ {
					if i-start >= done {
						if got[i] != xs[i] {
							t.Fatalf("%s, n=%d: value %d past the vector part was changed", k.name, n, i)
						}
						continue
					}
					want := k.scalar(xs[i])
					if math.Abs(float64(got[i]-want)) > 3e-7*math.Abs(float64(want)) {
						t.Fatalf("%s(%g): vector %g, scalar %g", k.name, xs[i], got[i], want)
					}
				}
			}
		}
		nan := []float32{1, 2, float32(math.NaN()), 4, 5, 6, 7, 8}
		k.vector(nan)
		if nan[2] == nan[2] {
			t.Fatalf("vector %s turned NaN into %g", k.name, nan[2])
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

// BenchmarkTanhSlice applies tanh to values spread as attention and LSTM pre-activations are (normal, σ = 2), so
// that both of tanhf's regimes occur, unpredictably.
func BenchmarkTanhSlice(b *testing.B) {
	rng := rand.New(rand.NewPCG(3, 3))
	xs := make([]float32, 6000)
	for i := range xs {
		xs[i] = float32(rng.NormFloat64() * 2)
	}
	buf := make([]float32, len(xs))
	for i := 0; i < b.N; i++ {
		copy(buf, xs)
		TanhSlice(buf)
	}
	b.ReportMetric(float64(len(xs)*b.N)/b.Elapsed().Seconds()/1e9, "Gelem/s")
}
