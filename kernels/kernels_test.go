package kernels

import (
	"math"
	"math/rand/v2"
	"testing"
)

// naiveGemm is the obviously-correct triple loop.
func naiveGemm(transA, transB bool, m, n, k int, alpha float64, a []float64, lda int, b []float64, ldb int, beta float64, c []float64, ldc int) {
	at := func(i, p int) float64 {
		if transA {
			return a[p*lda+i]
		}
		return a[i*lda+p]
	}
	bt := func(p, j int) float64 {
		if transB {
			return b[j*ldb+p]
		}
		return b[p*ldb+j]
	}
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			var s float64
			for p := 0; p < k; p++ {
				s += at(i, p) * bt(p, j)
			}
			c[i*ldc+j] = alpha*s + beta*c[i*ldc+j]
		}
	}
}

func TestGemmMatchesNaiveOnOddSizes(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	for _, sz := range [][3]int{{1, 1, 1}, {3, 5, 7}, {17, 1, 9}, {33, 65, 2}, {4, 4, 0}} {
		for _, tr := range [][2]bool{{false, false}, {true, false}, {false, true}, {true, true}} {
			m, n, k := sz[0], sz[1], sz[2]
			a, b := make([]float64, m*k), make([]float64, k*n)
			for i := range a {
				a[i] = rng.NormFloat64()
			}
			for i := range b {
				b[i] = rng.NormFloat64()
			}
			lda, ldb := k, n
			if tr[0] {
				lda = m
			}
			if tr[1] {
				ldb = k
			}
			ldc := n + 3 // a strided destination, as the gate blocks use
			got, want := make([]float64, m*ldc), make([]float64, m*ldc)
			for i := range got {
				got[i] = float64(i)
				want[i] = float64(i)
			}
			Gemm(tr[0], tr[1], m, n, k, 0.5, a, max(lda, 1), b, max(ldb, 1), 2, got, ldc)
			naiveGemm(tr[0], tr[1], m, n, k, 0.5, a, lda, b, ldb, 2, want, ldc)
			for i := range got {
				if math.Abs(got[i]-want[i]) > 1e-12 {
					t.Fatalf("size %v trans %v: c[%d] = %g, want %g", sz, tr, i, got[i], want[i])
				}
			}
			got32 := make([]float32, m*ldc)
			a32, b32 := make([]float32, len(a)), make([]float32, len(b))
			for i := range a {
				a32[i] = float32(a[i])
			}
			for i := range b {
				b32[i] = float32(b[i])
			}
			Gemm(tr[0], tr[1], m, n, k, 1, a32, max(lda, 1), b32, max(ldb, 1), 0, got32, ldc)
			for i := 0; i < m; i++ {
				for j := 0; j < n; j++ {
					w := (want[i*ldc+j] - 2*float64(i*ldc+j)) * 2
					if math.Abs(float64(got32[i*ldc+j])-w) > 1e-4*(1+math.Abs(w)) {
						t.Fatalf("float32 size %v trans %v: c[%d,%d] = %g, want %g", sz, tr, i, j, got32[i*ldc+j], w)
					}
				}
			}
		}
	}
}

func TestSoftmaxRowMasksAndNormalises(t *testing.T) {
	row := []float64{1000, 999, -5, 3, 7}
	SoftmaxRow(row, 3)
	if row[3] != 0 || row[4] != 0 {
		t.Fatalf("masked entries %v", row[3:])
	}
	e1 := math.Exp(-1)
	if want := 1 / (1 + e1 + math.Exp(-1005)); math.Abs(row[0]-want) > 1e-15 || math.Abs(row[0]+row[1]+row[2]-1) > 1e-15 {
		t.Fatalf("softmax %v", row)
	}
	all := []float32{1, 2}
	SoftmaxRow(all, 0)
	if all[0] != 0.5 || all[1] != 0.5 {
		t.Fatalf("fully masked row %v, want uniform", all)
	}
}

// LogSumExp must return SoftmaxRow's log-sum-exp to the last bit (beam search's scores rest on it), agree with
// a float64 sum, and leave its row alone.
func TestLogSumExpIsSoftmaxRowsFigure(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 4))
	for _, n := range []int{1, 7, 8, 9, 100, 10007} {
		row := make([]float32, n)
		for i := range row {
			row[i] = float32(rng.NormFloat64() * 8)
		}
		orig := append([]float32(nil), row...)
		got := LogSumExp(row, make([]float32, n))
		want := SoftmaxRow(append([]float32(nil), row...), n)
		if got != want {
			t.Fatalf("n %d: LogSumExp %v, SoftmaxRow's %v", n, got, want)
		}
		var sum float64
		for _, x := range row {
			sum += math.Exp(float64(x))
		}
		if math.Abs(got-math.Log(sum)) > 1e-6*math.Max(1, math.Abs(got)) {
			t.Fatalf("n %d: LogSumExp %v, float64 %v", n, got, math.Log(sum))
		}
		for i := range row {
			if row[i] != orig[i] {
				t.Fatalf("n %d: LogSumExp changed its row at %d", n, i)
			}
		}
	}
	if got := LogSumExp([]float64{}, nil); !math.IsInf(got, -1) {
		t.Fatalf("empty row: %v, want -Inf", got)
	}
}

// BenchmarkGemm measures the BLAS in use (OpenBLAS with -tags openblas) on the output layer's product of the
// "small" model over 16 steps of 64 rows: the figure the GEMM roofline of a training step is taken against.
func BenchmarkGemm(b *testing.B) {
	const m, n, k = 1024, 5898, 640
	a, w, c := make([]float32, m*k), make([]float32, k*n), make([]float32, m*n)
	rng := rand.New(rand.NewPCG(1, 1))
	for i := range a {
		a[i] = float32(rng.NormFloat64()) // not zeros: gonum's kernels skip zero multipliers
	}
	for i := range w {
		w[i] = float32(rng.NormFloat64())
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		Gemm(false, false, m, n, k, 1, a, k, w, n, 0, c, n)
	}
	b.ReportMetric(2*m*n*k*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
}

// TestOutputXentLabelSmoothingByHand checks the smoothed loss and its gradients on a case worked out by hand:
// one row x = [1 0], w = [[0 ln3] [0 0]], b = 0, so the logits are z = [0 ln3] and softmax(z) = [1/4 3/4]. With
// target 0 and ε = 0.5 the smoothed target is q = [0.5 + 0.25, 0.25] = [3/4 1/4]:
//
//	loss = −(3/4 ln 1/4 + 1/4 ln 3/4) = 1.1116409…,  G = softmax − q = [−1/2 1/2]
//	dw = xᵀG = [[−1/2 1/2] [0 0]],  db = G,  dx = G wᵀ = [ln3/2 0]
//
// A second row with the pad target adds nothing.
func TestOutputXentLabelSmoothingByHand(t *testing.T) {
	const tol = 1e-12
	ln3 := math.Log(3)
	x := []float64{1, 0, 5, 5}
	w := []float64{0, ln3, 0, 0}
	b := []float64{0, 0}
	dx, dw, db, scratch := make([]float64, 4), make([]float64, 4), make([]float64, 2), make([]float64, 4)
	loss := OutputXent(x, w, b, []int{0, -1}, -1, 2, 2, 2, 2, 0.5, dx, dw, db, scratch, nil)
	wantLoss := -(0.75*math.Log(0.25) + 0.25*math.Log(0.75))
	if math.Abs(loss-wantLoss) > tol {
		t.Fatalf("loss %.15g, want %.15g", loss, wantLoss)
	}
	for _, c := range []struct {
		name      string
		got, want []float64
	}{
		{"dw", dw, []float64{-0.5, 0.5, 0, 0}},
		{"db", db, []float64{-0.5, 0.5}},
		{"dx", dx, []float64{ln3 / 2, 0, 0, 0}},
	} {
		for i := range c.want {
			if math.Abs(c.got[i]-c.want[i]) > tol {
				t.Fatalf("%s[%d] = %.15g, want %.15g", c.name, i, c.got[i], c.want[i])
			}
		}
	}
	// ε = 0 is the plain cross-entropy −ln 1/4.
	if loss := OutputXent(x, w, b, []int{0, -1}, -1, 2, 2, 2, 2, 0, dx, dw, db, scratch, nil); math.Abs(loss-math.Log(4)) > tol {
		t.Fatalf("unsmoothed loss %.15g, want ln 4", loss)
	}
}

// TestGateMajorIsProjectInOneProduct checks that one product with GateMajor's layout gives Project's gates, on
// odd sizes, for LSTM (4) and GRU (3) gate counts.
func TestGateMajorIsProjectInOneProduct(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, gates := range []int{3, 4} {
		const rows, in, hidden = 5, 7, 6
		x, w := make([]float64, rows*in), make([]float64, gates*in*hidden)
		for i := range x {
			x[i] = rng.NormFloat64()
		}
		for i := range w {
			w[i] = rng.NormFloat64()
		}
		want, got, wg := make([]float64, rows*gates*hidden), make([]float64, rows*gates*hidden), make([]float64, len(w))
		Project(x, rows, in, w, gates, hidden, want, false)
		GateMajor(w, gates, in, hidden, wg)
		Gemm(false, false, rows, gates*hidden, in, 1, x, in, wg, gates*hidden, 0, got, gates*hidden)
		for i := range want {
			if math.Abs(got[i]-want[i]) > 1e-12 {
				t.Fatalf("%d gates: value %d is %g, Project gives %g", gates, i, got[i], want[i])
			}
		}
	}
}

// LogSumExps must give LogSumExp's figures to the last bit (beam search's scores rest on them) for any number of
// rows, rows of different lengths, and rows whose maximum is a signed zero, is NaN (a NaN first value) or is
// -Inf, in float32 and float64.
func TestLogSumExpsIsLogSumExp(t *testing.T) {
	testLogSumExps[float32](t)
	testLogSumExps[float64](t)
}

func testLogSumExps[T Float](t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	nan, inf := T(math.NaN()), T(math.Inf(-1))
	negZero := T(math.Copysign(0, -1))
	special := map[string]func(row []T){
		// A maximum of zero, whose first instance is +0 in a later lane than a -0 (maxOf finds -0); the
		// others' exps vanish beside it, so the log-sum-exp is a zero too.
		"signed zeros": func(row []T) {
			for i := range row {
				row[i] = -200
			}
			if len(row) > 9 {
				row[2], row[9] = 0, negZero
			}
		},
		"a NaN first": func(row []T) { row[0] = nan },
		"a NaN later": func(row []T) { row[len(row)-1] = nan },
		"all -Inf": func(row []T) {
			for i := range row {
				row[i] = inf
			}
		},
	}
	for _, lengths := range [][]int{{1}, {9, 9}, {5898, 5898, 5898}, {1003, 1003, 1003, 1003, 1003}, {17, 17, 17, 17}, {100, 100, 100, 100, 100, 100}, {8, 0, 8, 33, 33, 7}} {
		for _, name := range []string{"", "signed zeros", "a NaN first", "a NaN later", "all -Inf"} {
			rows, scratch := make([][]T, len(lengths)), make([][]T, len(lengths))
			for r, n := range lengths {
				rows[r], scratch[r] = make([]T, n), make([]T, n)
				for i := range rows[r] {
					rows[r][i] = T(rng.NormFloat64() * 8)
				}
				if f := special[name]; f != nil && n > 0 && r%2 == 1 {
					f(rows[r])
				}
			}
			got := make([]float64, len(rows))
			LogSumExps(rows, scratch, got)
			for r, row := range rows {
				want := LogSumExp(row, make([]T, len(row)))
				if math.Float64bits(got[r]) != math.Float64bits(want) && !(math.IsNaN(got[r]) && math.IsNaN(want)) {
					t.Fatalf("%T, lengths %v, %q, row %d: LogSumExps %v, LogSumExp %v", T(0), lengths, name, r, got[r], want)
				}
			}
		}
	}
}

// TestAxpyRoundsAsTheLoop requires Axpy to leave exactly (bit for bit) what y[i] += alpha*x[i] leaves, in float32
// and float64, over lengths with and without a tail, on values whose products and sums round; a fused
// multiply-add, which rounds once, differs from the loop on such values, so the test can tell.
func TestAxpyRoundsAsTheLoop(t *testing.T) {
	testAxpyRoundsAsTheLoop[float32](t)
	testAxpyRoundsAsTheLoop[float64](t)
}

func testAxpyRoundsAsTheLoop[T Float](t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	fused := 0
	for _, n := range []int{0, 1, 3, 4, 7, 16, 33, 1000} {
		x, y := make([]T, n), make([]T, n+2) // y longer than x: only len(x) values change
		for i := range x {
			x[i] = T(rng.NormFloat64() * math.Pow(10, float64(rng.IntN(5)-2)))
		}
		for i := range y {
			y[i] = T(rng.NormFloat64())
		}
		alpha := T(0.3712)
		want := append([]T(nil), y...)
		for i, v := range x {
			want[i] += alpha * v
			if T(math.FMA(float64(alpha), float64(v), float64(y[i]))) != want[i] {
				fused++
			}
		}
		Axpy(alpha, x, y)
		for i := range y {
			if math.Float64bits(float64(y[i])) != math.Float64bits(float64(want[i])) {
				t.Fatalf("%T n=%d: y[%d] = %v, the loop gives %v", x, n, i, y[i], want[i])
			}
		}
	}
	if _, f32 := any(T(0)).(float32); !f32 && fused == 0 {
		t.Fatalf("%T: no value where a fused multiply-add differs from the loop", T(0))
	}
}
