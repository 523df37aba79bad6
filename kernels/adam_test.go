package kernels

import (
	"math"
	"math/rand/v2"
	"testing"
)

// adamCase is a set of weights, gradients and moments of n values, with gradients and moments over several
// orders of magnitude (zero second moments included) as a model's are.
func adamCase(n int, seed uint64) (w, g, m, v []float32) {
	r := rand.New(rand.NewPCG(seed, 1))
	w, g, m, v = make([]float32, n), make([]float32, n), make([]float32, n), make([]float32, n)
	for i := range w {
		w[i] = float32(r.NormFloat64() * 0.1)
		g[i] = float32(r.NormFloat64() * math.Pow(10, -4*r.Float64()))
		m[i] = float32(r.NormFloat64() * 1e-3)
		if i%11 != 0 {
			v[i] = float32(r.Float64() * 1e-5)
		}
	}
	return w, g, m, v
}

// adamCoeffs are the constants of step t with learning rate 1e-3 and a clipping scale of 0.7.
func adamCoeffs(t int) AdamCoeffs {
	c1, c2 := 1-math.Pow(0.9, float64(t)), 1-math.Pow(0.999, float64(t))
	return AdamCoeffs{Scale: 0.7, Beta1: 0.9, Beta2: 0.999, OneMinusBeta1: 0.1, OneMinusBeta2: float32(1 - 0.999),
		StepSize: float32(1e-3 / c1), SqrtC2: float32(math.Sqrt(c2)), Eps: 1e-8}
}

// TestAdamUpdateVectorMatchesScalar runs AdamUpdate (assembly where the CPU has AVX2, then the scalar tail) and
// the scalar loop alone over the same 1,003 values for three steps: weights and moments must agree bit for bit.
func TestAdamUpdateVectorMatchesScalar(t *testing.T) {
	if !hasAVX2FMA {
		t.Log("no AVX2 here: both sides run the scalar loop")
	}
	w, g, m, v := adamCase(1003, 1)
	w2, m2, v2 := append([]float32(nil), w...), append([]float32(nil), m...), append([]float32(nil), v...)
	for step := 1; step <= 3; step++ {
		c := adamCoeffs(step)
		AdamUpdate(w, g, m, v, c)
		adamScalar(w2, g, m2, v2, c, 0)
	}
	for i := range w {
		if math.Float32bits(w[i]) != math.Float32bits(w2[i]) || math.Float32bits(m[i]) != math.Float32bits(m2[i]) ||
			math.Float32bits(v[i]) != math.Float32bits(v2[i]) {
			t.Fatalf("value %d: vector w %g m %g v %g, scalar w %g m %g v %g", i, w[i], m[i], v[i], w2[i], m2[i], v2[i])
		}
	}
}

// TestAdamUpdateMatchesFloat64 checks one step against Adam worked out in float64: each update to within a
// few float32 roundings of its terms (the first moment's two terms can cancel).
func TestAdamUpdateMatchesFloat64(t *testing.T) {
	w, g, m, v := adamCase(517, 2)
	w0, m0, v0 := append([]float32(nil), w...), append([]float32(nil), m...), append([]float32(nil), v...)
	const step = 4
	AdamUpdate(w, g, m, v, adamCoeffs(step))
	c1, c2 := 1-math.Pow(0.9, step), 1-math.Pow(0.999, step)
	for i := range w {
		gi := 0.7 * float64(g[i])
		mi := 0.9*float64(m0[i]) + 0.1*gi
		vi := 0.999*float64(v0[i]) + 0.001*gi*gi
		denom := math.Sqrt(vi/c2) + 1e-8
		update := 1e-3 * (mi / c1) / denom
		mTol := 1e-6 * (0.9*math.Abs(float64(m0[i])) + 0.1*math.Abs(gi))
		got := float64(w0[i]) - float64(w[i])
		if math.Abs(got-update) > 1e-6*math.Abs(update)+1e-3/c1*mTol/denom+2e-7*math.Abs(float64(w0[i])) {
			t.Fatalf("value %d: update %.9g, want %.9g", i, got, update)
		}
		if math.Abs(float64(m[i])-mi) > mTol || math.Abs(float64(v[i])-vi) > 1e-6*vi {
			t.Fatalf("value %d: moments %g %g, want %g %g", i, m[i], v[i], mi, vi)
		}
	}
}

// BenchmarkAdamUpdate updates 6.66M values, the parameters of the small model, on one core.
func BenchmarkAdamUpdate(b *testing.B) {
	w, g, m, v := adamCase(6_661_386, 3)
	c := adamCoeffs(10)
	b.SetBytes(int64(len(w)) * 4 * 7) // four slices read, three written
	for b.Loop() {
		AdamUpdate(w, g, m, v, c)
	}
}
