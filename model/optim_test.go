package model

import (
	"math"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/attend-nmt/attend/kernels"
	"github.com/attend-nmt/attend/param"
)

// The expected values of the optimizer tests below are worked out by hand (40-digit decimal arithmetic), not
// by the code under test. Parameters: a = (1, -1) and b = (0.5), in two tensors packed into one buffer; lr 0.01,
// β1 0.9, β2 0.999, ε 1e-8.
//
// Step 1: gradients a (3, 0), b (4), clipped to norm 1.
//
//	norm  = sqrt(3² + 0² + 4²) = 5
//	scale = 1 / (5 + 1e-6) = 0.19999996000000799999840000032
//	g     = (3, 0, 4) · scale = (0.59999988000002399999520, 0, 0.79999984000003199999360)
//	m1    = 0.1 g = (0.059999988000002399999520, 0, 0.079999984000003199999360)
//	v1    = 0.001 g² = (3.5999985600004319998848e-4, 0, 6.3999974400007679997952e-4)
//	t = 1: m̂ = m1 / (1-0.9) = g, v̂ = v1 / (1-0.999) = g², so the update is lr · g / (|g| + ε):
//	  a0: 0.01 · 0.599999880000024 / 0.599999890000024 = 0.0099999998333333027778   → 0.99000000016666669722
//	  a1: 0.01 · 0 / (0 + 1e-8) = 0                                                → -1
//	  b0: 0.01 · 0.799999840000032 / 0.799999850000032 = 0.0099999998749999765625   → 0.49000000012500002344
//
// Step 2: gradients a (1, -2), b (2), norm sqrt(1 + 4 + 4) = 3, under the limit 5: not clipped (scale 1).
//
//	m2 = 0.9 m1 + 0.1 g:   a0 0.9 · 0.059999988000002400 + 0.1 = 0.15399998920000216000
//	                       a1 0.9 · 0 - 0.2 = -0.2
//	                       b0 0.9 · 0.079999984000003200 + 0.2 = 0.27199998560000288000
//	v2 = 0.999 v1 + 0.001 g²:  a0 0.999 · 3.5999985600004320e-4 + 0.001 = 1.3596398561440431568e-3
//	                           a1 0 + 0.004 = 0.004
//	                           b0 0.999 · 6.3999974400007680e-4 + 0.004 = 4.6393597442560767232e-3
//	t = 2: 1-β1² = 0.19, 1-β2² = 0.001999; update = lr · (m2/0.19) / (sqrt(v2/0.001999) + ε):
//	  a0: 0.01 · 0.81052625894737978947 / (sqrt(0.68016000807605960820) = 0.82471813856375173592)
//	      = 0.0098279183058953273929  → 0.99000000016666669722 - that = 0.98017208186077136983
//	  a1: 0.01 · -1.0526315789473684211 / (sqrt(2.0010005002501250625) = 1.4145672484014766919)
//	      = -0.0074413681830646106537 → -0.99255863181693538935
//	  b0: 0.01 · 1.4315788715789625263 / (sqrt(2.3208402922741754493) = 1.5234304356530938920)
//	      = 0.0093970740552270199610  → 0.49000000012500002344 - that = 0.48060292606977300348

// adamTwoSteps runs the two steps above as a training step does (norm, clip scale, scaled update) and returns
// the weights after each step and the moments after the second, with the norms and scales it met.
func adamTwoSteps[T kernels.Float]() (w1, w2, m2, v2 []float64, norms, scales [2]float64) {
	params := param.NewSet[T]()
	a, b := params.Add("a", 2), params.Add("b", 1)
	params.Pack()
	a.Data[0], a.Data[1], b.Data[0] = 1, -1, 0.5
	grads := params.ZerosLike()
	opt := NewAdam(params, 0.01)
	flat := func(s *param.Set[T]) []float64 {
		var out []float64
		for _, x := range s.Flat() {
			out = append(out, float64(x))
		}
		return out
	}
	for i, step := range []struct {
		grad    []T
		maxNorm float64
	}{{[]T{3, 0, 4}, 1}, {[]T{1, -2, 2}, 5}} {
		copy(grads.Flat(), step.grad)
		norms[i] = GlobalNorm(grads)
		scales[i] = ClipScale(norms[i], step.maxNorm)
		opt.StepScaled(params, grads, T(scales[i]))
		if i == 0 {
			w1 = flat(params)
		}
	}
	return w1, flat(params), flat(opt.M), flat(opt.V), norms, scales
}

// TestAdamWithClippingMatchesHandComputedTwoSteps checks bias correction, ε, the moments and the folded
// clipping scale against the hand-worked values above, in float64 (to 1e-13) and float32 (to float32 rounding).
func TestAdamWithClippingMatchesHandComputedTwoSteps(t *testing.T) {
	want := struct{ w1, w2, m2, v2 []float64 }{
		w1: []float64{0.99000000016666669722, -1, 0.49000000012500002344},
		w2: []float64{0.98017208186077136983, -0.99255863181693538935, 0.48060292606977300348},
		m2: []float64{0.15399998920000216000, -0.2, 0.27199998560000288000},
		v2: []float64{1.3596398561440431568e-3, 0.004, 4.6393597442560767232e-3},
	}
	wantNorms, wantScales := [2]float64{5, 3}, [2]float64{0.19999996000000799999840000032, 1}
	for _, tc := range []struct {
		name string
		run  func() (w1, w2, m2, v2 []float64, norms, scales [2]float64)
		tol  float64 // relative, of the largest value compared
	}{
		{"float64", adamTwoSteps[float64], 1e-13},
		{"float32", adamTwoSteps[float32], 3e-7},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w1, w2, m2, v2, norms, scales := tc.run()
			for i := range 2 {
				if !within(norms[i], wantNorms[i], tc.tol) || !within(scales[i], wantScales[i], tc.tol) {
					t.Errorf("step %d: norm %.17g, scale %.17g; want %.17g and %.17g", i+1, norms[i], scales[i], wantNorms[i], wantScales[i])
				}
			}
			for _, c := range []struct {
				name      string
				got, want []float64
			}{{"weights after step 1", w1, want.w1}, {"weights after step 2", w2, want.w2},
				{"first moment after step 2", m2, want.m2}, {"second moment after step 2", v2, want.v2}} {
				for j := range c.want {
					if !within(c.got[j], c.want[j], tc.tol) {
						t.Errorf("%s [%d] = %.17g, want %.17g (gap %.3g)", c.name, j, c.got[j], c.want[j], c.got[j]-c.want[j])
					}
				}
			}
		})
	}
}

// close reports whether got is want to within tol relative to max(|want|, 1e-3).
func within(got, want, tol float64) bool {
	return math.Abs(got-want) <= tol*math.Max(math.Abs(want), 1e-3)
}

// TestClipScaleFollowsPyTorch is a table of norms and limits with the factor worked out by hand.
func TestClipScaleFollowsPyTorch(t *testing.T) {
	tests := []struct {
		name          string
		norm, maxNorm float64
		want          float64
	}{
		{"above the limit", 5, 1, 1 / 5.000001},
		{"far above", 1e6, 0.5, 0.5 / 1000000.000001},
		{"below the limit", 3, 5, 1},
		{"at the limit: the 1e-6 tips it just under 1", 1, 1, 1 / 1.000001},
		{"zero gradient", 0, 1, 1},
		{"no clipping (0)", 100, 0, 1},
		{"no clipping (negative)", 100, -1, 1},
		{"NaN norm", math.NaN(), 1, 1},
		{"infinite norm", math.Inf(1), 1, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ClipScale(tt.norm, tt.maxNorm); !within(got, tt.want, 1e-15) {
				t.Errorf("ClipScale(%g, %g) = %.17g, want %.17g", tt.norm, tt.maxNorm, got, tt.want)
			}
		})
	}
}

// TestGlobalNormSpansEveryTensor: the norm of (3) and (0, 4) in two tensors is 5, of (1, 2, 2) over three
// tensors 3, and ClipScale brings (3, 4) to norm 1 as (0.6, 0.8)/(1+2e-7).
func TestGlobalNormSpansEveryTensor(t *testing.T) {
	grads := param.NewSet[float64]()
	x, y := grads.Add("x", 1), grads.Add("y", 2)
	grads.Pack()
	x.Data[0], y.Data[0], y.Data[1] = 3, 0, 4
	if got := GlobalNorm(grads); got != 5 {
		t.Fatalf("GlobalNorm = %.17g, want 5", got)
	}
	for j, g := range grads.Flat() {
		grads.Flat()[j] = g * ClipScale(5, 1)
	}
	// 3 / 5.000001 = 0.59999988000002400, 4 / 5.000001 = 0.79999984000003200
	for i, want := range []float64{0.599999880000024, 0, 0.799999840000032} {
		if got := grads.Flat()[i]; !within(got, want, 1e-14) {
			t.Errorf("clipped gradient [%d] = %.17g, want %.17g", i, got, want)
		}
	}
	three := param.NewSet[float32]()
	for _, name := range []string{"p", "q", "r"} {
		three.Add(name, 1)
	}
	copy(three.Flat(), []float32{1, -2, 2})
	if got := GlobalNorm(three); got != 3 {
		t.Fatalf("GlobalNorm of (1, -2, 2) = %.17g, want 3", got)
	}
}

// TestGlobalNormOverManyBlocks checks the blocked, multi-core norm on a set spanning many blocks (and a short last
// one): every gradient 0.5 in float32 (exact squares 0.25), so the norm is exactly 0.5·sqrt(n) whatever the
// order; and a random set gives the same bits on one core and on two.
func TestGlobalNormOverManyBlocks(t *testing.T) {
	const n = 9*normBlock + 123
	grads := param.NewSet[float32]()
	grads.Add("a", 3*normBlock+5)
	grads.Add("b", n-(3*normBlock+5))
	for i := range grads.Flat() {
		grads.Flat()[i] = 0.5
	}
	if got, want := GlobalNorm(grads), 0.5*math.Sqrt(n); got != want {
		t.Fatalf("GlobalNorm of %d halves = %.17g, want %.17g", n, got, want)
	}
	rng := rand.New(rand.NewPCG(7, 8))
	for i := range grads.Flat() {
		grads.Flat()[i] = float32(rng.NormFloat64())
	}
	two := GlobalNorm(grads)
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	if one := GlobalNorm(grads); one != two {
		t.Fatalf("GlobalNorm on one core %.17g, on two %.17g", one, two)
	}
}

// TestCopiesTrainAsThePyTorchPair checks that a tensor with Copies 2 trains as PyTorch trains an LSTM's b_ih and
// b_hh: two tensors with the same gradient, clipped together, whose sum is the bias. Over five clipped Adam
// steps (float64 and float32) the one tensor stays the sum of the two to rounding, and the clip norm counts it
// twice.
func TestCopiesTrainAsThePyTorchPair(t *testing.T) {
	t.Run("float64", func(t *testing.T) { testCopiesTrainAsThePyTorchPair[float64](t, 1e-12) })
	t.Run("float32", func(t *testing.T) { testCopiesTrainAsThePyTorchPair[float32](t, 1e-6) })
}

func testCopiesTrainAsThePyTorchPair[T kernels.Float](t *testing.T, tol float64) {
	// one: a weight w (3 values) and a bias b (2 values) with Copies 2; pair: w, b_ih and b_hh.
	one, pair := param.NewSet[T](), param.NewSet[T]()
	w1, b := one.Add("w", 3), one.Add("b", 2)
	b.Copies = 2
	w2, bih, bhh := pair.Add("w", 3), pair.Add("b_ih", 2), pair.Add("b_hh", 2)
	one.Pack()
	pair.Pack()
	copy(w1.Data, []T{0.5, -0.25, 1})
	copy(w2.Data, w1.Data)
	copy(bih.Data, []T{0.1, -0.3})
	copy(bhh.Data, []T{0.2, 0.05})
	for i := range b.Data {
		b.Data[i] = bih.Data[i] + bhh.Data[i]
	}
	gOne, gPair := one.ZerosLike(), pair.ZerosLike()
	if gOne.Get("b").Copies != 2 {
		t.Fatal("ZerosLike lost Copies")
	}
	adamOne, adamPair := NewAdam(one, 0.01), NewAdam(pair, 0.01)
	rng := rand.New(rand.NewPCG(5, 6))
	for step := 0; step < 5; step++ {
		for i := range 3 {
			gOne.Get("w").Data[i] = T(rng.NormFloat64())
		}
		for i := range 2 {
			gOne.Get("b").Data[i] = T(3 * rng.NormFloat64()) // large: the clip is active
		}
		copy(gPair.Get("w").Data, gOne.Get("w").Data)
		copy(gPair.Get("b_ih").Data, gOne.Get("b").Data)
		copy(gPair.Get("b_hh").Data, gOne.Get("b").Data)
		nOne, nPair := GlobalNorm(gOne), GlobalNorm(gPair)
		if math.Abs(nOne-nPair) > tol*nPair {
			t.Fatalf("step %d: norm %g, the pair's %g", step, nOne, nPair)
		}
		adamOne.StepScaled(one, gOne, T(ClipScale(nOne, 1)))
		adamPair.StepScaled(pair, gPair, T(ClipScale(nPair, 1)))
	}
	for i := range 3 {
		if math.Abs(float64(w1.Data[i]-w2.Data[i])) > tol {
			t.Fatalf("w[%d] %g, the pair's model %g", i, w1.Data[i], w2.Data[i])
		}
	}
	for i := range 2 {
		sum := float64(bih.Data[i]) + float64(bhh.Data[i])
		if math.Abs(float64(b.Data[i])-sum) > tol {
			t.Fatalf("b[%d] %g, b_ih + b_hh %g", i, b.Data[i], sum)
		}
		if moved := math.Abs(float64(b.Data[i]) - []float64{0.3, -0.25}[i]); moved < 0.01 {
			t.Fatalf("b[%d] moved only %g in five steps of 0.01: the test checks nothing", i, moved)
		}
	}
}
