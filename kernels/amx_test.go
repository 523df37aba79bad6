package kernels

import (
	"fmt"
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

// skipWithoutBF16Products skips t where AMXOutput's products, split or not, cannot run: on AMX, or unsplit on
// AVX512-BF16.
func skipWithoutBF16Products(t testing.TB, split bool) {
	if err := bf16Permit(split); err != nil {
		t.Skipf("no bfloat16 products here (split %v): %v", split, err)
	}
}

// newAMXOutput returns one AMXOutput made alone (NewAMXOutputs of one), as a test's reference of its own.
func newAMXOutput(split bool) (*AMXOutput, error) {
	outs, err := NewAMXOutputs(1, split)
	if err != nil {
		return nil, err
	}
	return outs[0], nil
}

// TestAMXMulMatchesRoundedSums multiplies random matrices of odd shapes (rows, columns and k's not whole 16s or
// 32s, and shapes of exactly one block) on the tile registers, a and b row-major or transposed, and checks every
// sum against the float64 sum of the bfloat16-rounded terms to within float32 summation error, k·2^-24·Σ|ã||b̃|;
// k's past amxChunk are summed in more than one pass. Values of c outside the product (a wider ldc) must be left
// alone. Each shape is multiplied twice, setting c and adding to it (c = −7 + ã·b̃), through operands that are
// fitted again from shape to shape, so that a larger shape's values left in their storage would show. Split
// (bfloat16x3), the sums are of the three products of parts, hi·hi + hi·lo + lo·hi (3k terms), and must also be
// within a relative 3·2^-17 of the exact float64 product x·w.
func TestAMXMulMatchesRoundedSums(t *testing.T) {
	for _, split := range []bool{false, true} {
		t.Run(fmt.Sprintf("split=%v", split), func(t *testing.T) {
			skipWithoutAMX(t)
			testBF16MulMatchesRoundedSums(t, split, amxMul)
		})
	}
}

// TestDPMulMatchesRoundedSums is TestAMXMulMatchesRoundedSums for the products on VDPBF16PS (dpMul, where
// AVX512-BF16 runs) and in plain Go, which AMXOutput uses where AMX does not run.
func TestDPMulMatchesRoundedSums(t *testing.T) {
	for _, asm := range []bool{false, true} {
		for _, split := range []bool{false, true} {
			t.Run(fmt.Sprintf("asm=%v/split=%v", asm, split), func(t *testing.T) {
				if asm && !hasBF16 {
					t.Skip("no AVX512-BF16 on this CPU")
				}
				testBF16MulMatchesRoundedSums(t, split, func(a *amxA, b *amxB, c []float32, ldc int, add bool) error {
					return dpMul(asm, a, b, c, ldc, add)
				})
			})
		}
	}
}

// testBF16MulMatchesRoundedSums is TestAMXMulMatchesRoundedSums with operands split or not, multiplied by mul.
func testBF16MulMatchesRoundedSums(t *testing.T, split bool, mul func(a *amxA, b *amxB, c []float32, ldc int, add bool) error) {
	rng := rand.New(rand.NewPCG(3, 4))
	a, b := &amxA{}, &amxB{}
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
		{37, 2500, 70, false, true, 2}, // three chunks of k, the last partial
		{64, 1100, 64, true, false, 0},
		{5, 9, 3, false, false, 1},      // after a larger shape: the storage is reused
		{70, 640, 200, false, false, 2}, // strips not a whole three: the last group overlaps
		{19, 1500, 97, true, true, 0},
	} {
		for _, add := range []bool{false, true} {
			m, k, n := s.m, s.k, s.n
			x, w := make([]float32, m*k), make([]float32, k*n)
			for i := range x {
				x[i] = float32(rng.NormFloat64())
			}
			for i := range w {
				w[i] = float32(rng.NormFloat64() * 0.3)
			}
			a.fit(m, k, split)
			b.fit(k, n, split)
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
			if err := mul(a, b, c, ldc, add); err != nil {
				t.Fatal(err)
			}
			start := 0.0 // what c held where the product goes: −7 when it is added
			if add {
				start = -7
			}
			terms := k // the products summed into each value of c
			if split {
				terms = 3 * k
			}
			gamma := float64(terms+1) / (1 << 24)
			var worst, worstExact float64
			for i := 0; i < m; i++ {
				for j := 0; j < ldc; j++ {
					got := float64(c[i*ldc+j])
					if j >= n {
						if got != -7 {
							t.Fatalf("%+v: c[%d][%d] = %g outside the product", s, i, j, got)
						}
						continue
					}
					sum, abs := start, math.Abs(start)
					exact, exactAbs := start, math.Abs(start)
					for l := 0; l < k; l++ {
						xv, wv := x[i*xr+l*xc], w[l*wr+j*wc]
						exact += float64(xv) * float64(wv)
						exactAbs += math.Abs(float64(xv) * float64(wv))
						if !split {
							p := float64(FromBF16(ToBF16(xv))) * float64(FromBF16(ToBF16(wv)))
							sum += p
							abs += math.Abs(p)
							continue
						}
						xh, xl := splitBF16(xv)
						wh, wl := splitBF16(wv)
						for _, p := range []float64{
							float64(FromBF16(xh)) * float64(FromBF16(wh)),
							float64(FromBF16(xh)) * float64(FromBF16(wl)),
							float64(FromBF16(xl)) * float64(FromBF16(wh)),
						} {
							sum += p
							abs += math.Abs(p)
						}
					}
					d := math.Abs(got - sum)
					if d > gamma*abs+1e-30 {
						t.Fatalf("%+v: c[%d][%d] = %.9g, the rounded terms sum to %.9g (off by %.3g, %.3g of Σ|ãb̃|)", s, i, j, got, sum, d, d/abs)
					}
					worst = max(worst, d/abs)
					if split {
						de := math.Abs(got - exact)
						if de > (3.0/(1<<17)+gamma)*exactAbs+1e-30 {
							t.Fatalf("%+v: c[%d][%d] = %.9g, x·w = %.9g (off by %.3g of Σ|xw|)", s, i, j, got, exact, de/exactAbs)
						}
						worstExact = max(worstExact, de/exactAbs)
					}
				}
			}
			t.Logf("%+v add=%v: worst error %.3g of Σ|ãb̃| (bound %.3g); against x·w %.3g", s, add, worst, gamma, worstExact)
		}
	}
}

// TestAMXRoundingMatchesToBF16 rounds matrices of odd shapes, row-major and transposed, with the AVX-512 kernels
// (where the CPU has them) and in plain Go, and checks every bfloat16 against ToBF16 bit for bit: ties, signed
// zeros, subnormals, infinities and values that round up to infinity included. Split (bfloat16x3), every part
// must be splitBF16's, in its segment.
func TestAMXRoundingMatchesToBF16(t *testing.T) {
	for _, split := range []bool{false, true} {
		t.Run(fmt.Sprintf("split=%v", split), func(t *testing.T) { testAMXRoundingMatchesToBF16(t, split) })
	}
}

// testAMXRoundingMatchesToBF16 is TestAMXRoundingMatchesToBF16 with matrices split or not.
func testAMXRoundingMatchesToBF16(t *testing.T, split bool) {
	rng := rand.New(rand.NewPCG(7, 8))
	special := []float32{0, float32(math.Copysign(0, -1)), 1 + 1.0/256, 1 + 3.0/256, -(1 + 1.0/256), 1e-40, -3e-39,
		float32(math.Inf(1)), float32(math.Inf(-1)), math.MaxFloat32, -math.MaxFloat32}
	ways := []bool{false}
	if amxVectorRound() {
		ways = append(ways, true)
	}
	for _, sh := range [][2]int{{1, 1}, {3, 16}, {17, 33}, {40, 71}} {
		m, k := sh[0], sh[1]
		x := make([]float32, m*k)
		for i := range x {
			x[i] = float32(rng.NormFloat64() * 10)
			if i%7 == 0 {
				x[i] = special[i/7%len(special)]
			}
		}
		for _, vector := range ways {
			for _, transposed := range []bool{false, true} {
				rs, cs := k, 1 // x as (m, k) row-major, or as the transpose of a (k, m) one
				if transposed {
					rs, cs = 1, m
				}
				a := &amxA{}
				a.fit(m, k, split)
				a.roundWith(vector, x, rs, cs)
				for i := 0; i < m; i++ {
					for j := 0; j < a.kp; j++ {
						want := uint16(0)
						if s, jj := j/a.seg, j%a.seg; jj < k {
							hi, lo := splitBF16(x[i*rs+jj*cs])
							switch {
							case !split:
								want = ToBF16(x[i*rs+jj*cs])
							case s == 0: // segments hi, lo
								want = hi
							default:
								want = lo
							}
						}
						if got := a.data[i*a.kp+j]; got != want {
							t.Fatalf("amxA (%d, %d) vector %v transposed %v: [%d][%d] = %#x, want %#x", m, k, vector, transposed, i, j, got, want)
						}
					}
				}
				// The same values as a (k', n') = (m, k) matrix for amxB.
				b := &amxB{}
				b.fit(m, k, split)
				b.roundWith(vector, x, rs, cs)
				for p := 0; p < b.kp/2; p++ {
					for j := 0; j < b.np; j++ {
						var want uint32
						s, pp := p/(b.seg/2), p%(b.seg/2) // segments hi, lo
						for h := 0; h < 2; h++ {
							if i := 2*pp + h; i < m && j < k {
								hi, lo := splitBF16(x[i*rs+j*cs])
								part := hi
								if !split {
									part = ToBF16(x[i*rs+j*cs])
								} else if s == 1 {
									part = lo
								}
								want |= uint32(part) << (16 * h)
							}
						}
						if got := b.data[j/16*b.kp/2*16+p*16+j%16]; got != want {
							t.Fatalf("amxB (%d, %d) vector %v transposed %v: pair %d column %d = %#x, want %#x", m, k, vector, transposed, p, j, got, want)
						}
					}
				}
			}
		}
	}
}

// TestAMXMulConcurrent runs products on more goroutines than the process has threads for Go code, so that the
// scheduler moves them between threads and preempts them with signals between and during the tile kernels, and
// checks every result bit for bit against the same product run alone.
func TestAMXMulConcurrent(t *testing.T) {
	skipWithoutAMX(t)
	const m, k, n, workers, runs = 200, 640, 1000, 6, 20
	rng := rand.New(rand.NewPCG(9, 10))
	x, w := make([]float32, m*k), make([]float32, k*n)
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	for i := range w {
		w[i] = float32(rng.NormFloat64())
	}
	a, b := newAMXA(m, k), newAMXB(k, n)
	a.round(x, k, 1)
	b.round(w, n, 1)
	want := make([]float32, m*n)
	if err := amxMul(a, b, want, n, false); err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, workers)
	for range workers {
		go func() {
			c := make([]float32, m*n)
			for range runs {
				if err := amxMul(a, b, c, n, false); err != nil {
					errs <- err
					return
				}
				for i := range c {
					if math.Float32bits(c[i]) != math.Float32bits(want[i]) {
						errs <- fmt.Errorf("c[%d] = %g, %g alone", i, c[i], want[i])
						return
					}
				}
			}
			errs <- nil
		}()
	}
	for range workers {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}

// TestAMXMulRefusesMismatchedShapes checks that amxMul reports inner dimensions that differ and a c too short.
func TestAMXMulRefusesMismatchedShapes(t *testing.T) {
	if err := amxMul(newAMXA(3, 4), newAMXB(5, 6), make([]float32, 18), 6, false); err == nil {
		t.Error("(3, 4) by (5, 6) accepted")
	}
	if err := amxMul(newAMXA(3, 4), newAMXB(4, 6), make([]float32, 17), 6, false); err == nil {
		t.Error("17 values of c accepted for (3, 6)")
	}
}

// BenchmarkAMXOutputLayer times the output layer's products at training's shapes on one goroutine — 432 rows (a
// core's share of a batch), 640 inputs, 5,898 words — and at beam search's 320 rows: the forward product X·W, the
// input gradient dL·Wᵀ and the weight gradient Xᵀ·dL; and the forward product at greedy decoding's 128 rows
// (BenchmarkDecodeOutputLayer's shape). Each shape runs as float32 Gemm on the active BLAS (run
// with -tags openblas and OPENBLAS_NUM_THREADS=1 for OpenBLAS on one core), as the AMX product of operands
// rounded beforehand ("amx"; "-parallel" runs one product on each of GOMAXPROCS goroutines at once, the total
// rate shared by the cores), and with a's rounding counted ("amx+roundA"); "roundA" and "roundB" time the
// roundings alone (b's is once a step for the weights, every product for dL). GFLOP/s count 2·M·N·K per product, whatever is timed.
func BenchmarkAMXOutputLayer(b *testing.B) {
	const rows, beam, k, n = 432, 320, 640, 5898
	rng := rand.New(rand.NewPCG(1, 1))
	x, w, dl := make([]float32, rows*k), make([]float32, k*n), make([]float32, rows*n)
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	for i := range w {
		w[i] = float32(rng.NormFloat64() * 0.05)
	}
	for i := range dl {
		dl[i] = float32(rng.NormFloat64() * 1e-3)
	}
	for _, s := range []struct {
		name     string
		m, n, k  int
		tA, tB   bool
		a, bm    []float32 // row-major as stored: a is (m, k), or (k, m) when tA; bm is (k, n), or (n, k) when tB
		lda, ldb int
		ar, ac   int // a's element (i, j) is at a[i*ar+j*ac]
		br, bc   int // b's element (i, j) is at bm[i*br+j*bc]
	}{
		{name: "forward", m: rows, n: n, k: k, a: x, bm: w, lda: k, ldb: n, ar: k, ac: 1, br: n, bc: 1},
		{name: "decode128", m: 128, n: n, k: k, a: x, bm: w, lda: k, ldb: n, ar: k, ac: 1, br: n, bc: 1},
		{name: "beam320", m: beam, n: n, k: k, a: x, bm: w, lda: k, ldb: n, ar: k, ac: 1, br: n, bc: 1},
		{name: "dX=dL·Wt", m: rows, n: k, k: n, tB: true, a: dl, bm: w, lda: n, ldb: n, ar: n, ac: 1, br: 1, bc: n},
		{name: "dW=Xt·dL", m: k, n: n, k: rows, tA: true, a: x, bm: dl, lda: k, ldb: n, ar: 1, ac: k, br: n, bc: 1},
	} {
		c := make([]float32, s.m*s.n)
		gflops := func(b *testing.B) {
			b.ReportMetric(2*float64(s.m)*float64(s.n)*float64(s.k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		}
		b.Run(s.name+"/float32", func(b *testing.B) {
			for range b.N {
				Gemm(s.tA, s.tB, s.m, s.n, s.k, 1, s.a, s.lda, s.bm, s.ldb, 0, c, s.n)
			}
			gflops(b)
		})
		b.Run(s.name+"/float32-parallel", func(b *testing.B) {
			b.RunParallel(func(pb *testing.PB) {
				c := make([]float32, s.m*s.n)
				for pb.Next() {
					Gemm(s.tA, s.tB, s.m, s.n, s.k, 1, s.a, s.lda, s.bm, s.ldb, 0, c, s.n)
				}
			})
			gflops(b)
		})
		a, bp := newAMXA(s.m, s.k), newAMXB(s.k, s.n)
		a.round(s.a, s.ar, s.ac)
		bp.round(s.bm, s.br, s.bc)
		b.Run(s.name+"/amx", func(b *testing.B) {
			skipWithoutAMX(b)
			for range b.N {
				if err := amxMul(a, bp, c, s.n, false); err != nil {
					b.Fatal(err)
				}
			}
			gflops(b)
		})
		b.Run(s.name+"/amx-parallel", func(b *testing.B) {
			skipWithoutAMX(b)
			b.RunParallel(func(pb *testing.PB) {
				c := make([]float32, s.m*s.n)
				for pb.Next() {
					if err := amxMul(a, bp, c, s.n, false); err != nil {
						b.Error(err)
						return
					}
				}
			})
			gflops(b)
		})
		b.Run(s.name+"/amx+roundA", func(b *testing.B) {
			skipWithoutAMX(b)
			for range b.N {
				a.round(s.a, s.ar, s.ac)
				if err := amxMul(a, bp, c, s.n, false); err != nil {
					b.Fatal(err)
				}
			}
			gflops(b)
		})
		b.Run(s.name+"/roundA", func(b *testing.B) {
			for range b.N {
				a.round(s.a, s.ar, s.ac)
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N), "µs/round")
		})
		b.Run(s.name+"/roundB", func(b *testing.B) {
			for range b.N {
				bp.round(s.bm, s.br, s.bc)
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N), "µs/round")
		})
	}
}

// TestAMXFitClearsPadding fits operands whose storage is full of nonzero values (as a larger shape leaves it) to
// smaller shapes, split and not, rounds values into them (row-major and transposed), and checks that every value
// of the padding is zero and that the product equals that of operands made afresh, bit for bit: fit clears only
// the padding, and round must set everything else.
func TestAMXFitClearsPadding(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for _, split := range []bool{false, true} {
		for _, s := range []struct{ m, k, n int }{{40, 70, 50}, {33, 31, 17}, {64, 64, 64}, {5, 3, 1}, {32, 97, 40}} {
			for _, transposed := range []bool{false, true} {
				name := fmt.Sprintf("split=%v/%dx%dx%d/transposed=%v", split, s.m, s.k, s.n, transposed)
				x, w := make([]float32, s.m*s.k), make([]float32, s.k*s.n)
				for i := range x {
					x[i] = float32(rng.NormFloat64())
				}
				for i := range w {
					w[i] = float32(rng.NormFloat64())
				}
				a, b := &amxA{}, &amxB{}
				a.fit(100, 200, true)
				b.fit(200, 100, true)
				for i := range a.data {
					a.data[i] = 0x3f80 // bfloat16 1
				}
				for i := range b.data {
					b.data[i] = 0x3f803f80
				}
				a.fit(s.m, s.k, split)
				b.fit(s.k, s.n, split)
				fresh, freshB := &amxA{}, &amxB{}
				fresh.fit(s.m, s.k, split)
				freshB.fit(s.k, s.n, split)
				if transposed { // x as the transpose of a row-major (k, m), w of a row-major (n, k)
					a.round(x, 1, s.m)
					fresh.round(x, 1, s.m)
					b.round(w, 1, s.k)
					freshB.round(w, 1, s.k)
				} else {
					a.round(x, s.k, 1)
					fresh.round(x, s.k, 1)
					b.round(w, s.n, 1)
					freshB.round(w, s.n, 1)
				}
				for i := 0; i < a.mp; i++ {
					for j := 0; j < a.kp; j++ {
						if v := a.data[i*a.kp+j]; (i >= a.m || j%a.seg >= a.k) && v != 0 {
							t.Fatalf("%s: a's padding (%d, %d) is %#x", name, i, j, v)
						}
					}
				}
				for j := 0; j < b.np; j++ {
					for p := 0; p < b.kp/2; p++ {
						if v := b.data[b.at(p, j)]; (j >= b.n || p%(b.seg/2) >= (b.k+1)/2) && v != 0 {
							t.Fatalf("%s: b's padding (pair %d, column %d) is %#x", name, p, j, v)
						}
					}
				}
				if err := amxPermit(); err != nil {
					continue // the layouts are checked; the products need AMX
				}
				got, want := make([]float32, s.m*s.n), make([]float32, s.m*s.n)
				if err := amxMul(a, b, got, s.n, false); err != nil {
					t.Fatal(err)
				}
				if err := amxMul(fresh, freshB, want, s.n, false); err != nil {
					t.Fatal(err)
				}
				for i := range got {
					if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
						t.Fatalf("%s: c[%d] = %g, %g afresh", name, i, got[i], want[i])
					}
				}
			}
		}
	}
}
