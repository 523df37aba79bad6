package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"testing"
)

// naiveOutputXent is OutputXent written out row by row in float64 with no chunks and no workers: logits, log
// softmax, the smoothed loss, and the gradients dx = G wᵀ, dw = xᵀ G, db = Σ_r G_r with G = softmax − q.
func naiveOutputXent(x, w, b []float64, targets []int, pad, n, in, v int, eps float64, round func(float64) float64) (loss float64, dx, dw, db, absDx, absDw []float64) {
	dx, dw, db = make([]float64, n*in), make([]float64, in*v), make([]float64, v)
	absDx, absDw = make([]float64, n*in), make([]float64, in*v)
	for r := 0; r < n; r++ {
		if targets[r] == pad {
			continue
		}
		z := make([]float64, v)
		for j := range z {
			z[j] = b[j]
			for k := 0; k < in; k++ {
				z[j] += round(x[r*in+k]) * round(w[k*v+j])
			}
		}
		maxz := slices.Max(z)
		var sum float64
		for _, zj := range z {
			sum += math.Exp(zj - maxz)
		}
		lse := maxz + math.Log(sum)
		for j, zj := range z {
			q := eps / float64(v)
			if j == targets[r] {
				q += 1 - eps
			}
			loss -= q * (zj - lse)
			g := math.Exp(zj-lse) - q
			db[j] += g
			for k := 0; k < in; k++ {
				tw, tx := round(x[r*in+k])*round(g), round(g)*round(w[k*v+j])
				dw[k*v+j] += tw
				dx[r*in+k] += tx
				absDw[k*v+j] += math.Abs(tw)
				absDx[r*in+k] += math.Abs(tx)
			}
		}
	}
	return loss, dx, dw, db, absDx, absDw
}

// exact is naiveOutputXent's rounding of the products' terms for products in float64: none.
func exact(v float64) float64 { return v }

// TestOutputXentMatchesNaive checks OutputXent on sizes where its chunks and its workers both split the work
// (rows over several chunks, enough rows and vocabulary columns for two goroutines, pad rows in between) against
// the naive row-by-row computation, and checks that one worker and two give the same bits.
func TestOutputXentMatchesNaive(t *testing.T) {
	const n, in, v, chunk, pad = 150, 7, 1200, 64, 0
	rng := rand.New(rand.NewPCG(5, 6))
	fill := func(n int) []float64 {
		s := make([]float64, n)
		for i := range s {
			s[i] = rng.NormFloat64()
		}
		return s
	}
	x, w, b := fill(n*in), fill(in*v), fill(v)
	targets := make([]int, n)
	for r := range targets {
		targets[r] = rng.IntN(v)
		if r%7 == 3 {
			targets[r] = pad
		}
	}
	for _, eps := range []float64{0, 0.1} {
		wantLoss, wantDx, wantDw, wantDb, _, _ := naiveOutputXent(x, w, b, targets, pad, n, in, v, eps, exact)
		run := func(procs int) (float64, []float64, []float64, []float64) {
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
			dx, dw, db, scratch := make([]float64, n*in), make([]float64, in*v), make([]float64, v), make([]float64, chunk*v)
			loss := OutputXent(x, w, b, targets, pad, n, in, v, chunk, eps, dx, dw, db, scratch, nil)
			return loss, dx, dw, db
		}
		loss, dx, dw, db := run(2)
		const tol = 1e-9
		if math.Abs(loss-wantLoss) > tol*math.Abs(wantLoss) {
			t.Fatalf("ε=%g: loss %.15g, want %.15g", eps, loss, wantLoss)
		}
		for _, c := range []struct {
			name      string
			got, want []float64
		}{{"dx", dx, wantDx}, {"dw", dw, wantDw}, {"db", db, wantDb}} {
			for i := range c.want {
				if math.Abs(c.got[i]-c.want[i]) > tol {
					t.Fatalf("ε=%g: %s[%d] = %.15g, want %.15g", eps, c.name, i, c.got[i], c.want[i])
				}
			}
		}
		loss1, dx1, dw1, db1 := run(1)
		if loss1 != loss || !slices.Equal(dx1, dx) || !slices.Equal(dw1, dw) || !slices.Equal(db1, db) {
			t.Fatalf("ε=%g: one worker and two differ (loss %.17g vs %.17g)", eps, loss1, loss)
		}
	}
}

// normals returns n values drawn from rng, normal with standard deviation scale, for benchmarks' operands.
func normals(rng *rand.Rand, n int, scale float64) []float32 {
	s := make([]float32, n)
	for i := range s {
		s[i] = float32(rng.NormFloat64() * scale)
	}
	return s
}

// BenchmarkOutputXent times the fused output layer of the "small" model on one Multi30k-sized batch: 1024 target
// positions (64 sentences × 16 steps), 640 features ([s ; context ; emb]), a 5,898-word vocabulary.
func BenchmarkOutputXent(b *testing.B) {
	const n, in, v = 1024, 640, 5898
	rng := rand.New(rand.NewPCG(1, 2))
	x, w, bias := normals(rng, n*in, 1), normals(rng, in*v, 0.04), normals(rng, v, 0.04)
	targets := make([]int, n)
	for r := range targets {
		targets[r] = rng.IntN(v)
	}
	dx, dw, db, scratch := make([]float32, n*in), make([]float32, in*v), make([]float32, v), make([]float32, n*v)
	for _, chunk := range []int{1024, 512, 256} {
		b.Run(fmt.Sprintf("chunk=%d", chunk), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				OutputXent(x, w, bias, targets, -1, n, in, v, chunk, 0, dx, dw, db, scratch, nil)
			}
			b.ReportMetric(3*2*n*in*v*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}

// BenchmarkOutputXentWorkers times the output layer as training's two workers run it: each called with its half of
// one step's 874 rows (640 inputs, 5,898 words, chunks of 256), at once, in bfloat16x3 on AMX (in bfloat16 on
// AVX512-BF16 where AMX does not run), the weights packed afresh each iteration (WeightsChanged, as the trainer
// marks every step). "rows": each takes its rows through every word, one packing of the weights shared;
// "vocabulary" (the default, train.split_vocabulary): the two as an OutputTeam, each taking all 874 rows through
// its half of the words. GFLOP/s count both workers' three products, float32-equivalent.
func BenchmarkOutputXentWorkers(b *testing.B) {
	const n, in, v, chunk = 437, 640, 5898, 256 // a worker's rows
	rng := rand.New(rand.NewPCG(1, 2))
	w, bias := normals(rng, in*v, 0.04), normals(rng, v, 0.04)
	amx, err := NewAMXOutputs(2, amxPermit() == nil)
	if err != nil {
		b.Skipf("no bfloat16 products here: %v", err)
	}
	type work struct {
		x, dx, dw, db, scratch []float32
		targets                []int
	}
	var ws [2]work
	for i := range ws {
		ws[i] = work{x: normals(rng, n*in, 1), dx: make([]float32, n*in), dw: make([]float32, in*v), db: make([]float32, v),
			scratch: make([]float32, chunk*v), targets: make([]int, n)}
		for r := range ws[i].targets {
			ws[i].targets[r] = rng.IntN(v)
		}
	}
	for _, shared := range []string{"rows", "vocabulary"} {
		b.Run(shared, func(b *testing.B) {
			for range b.N {
				amx[0].WeightsChanged()
				if shared == "vocabulary" {
					amx[0].Team().Begin(amx)
				}
				var wg sync.WaitGroup
				for k := range ws {
					wg.Add(1)
					go func() {
						defer wg.Done()
						c := ws[k]
						OutputXent(c.x, w, bias, c.targets, -1, n, in, v, chunk, 0, c.dx, c.dw, c.db, c.scratch, amx[k])
					}()
				}
				wg.Wait()
				amx[0].Team().End()
			}
			b.ReportMetric(2*3*2*n*in*v*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}

// xentAMXCase is OutputXent's case for its AMX products: 100 rows (every ninth a pad row) of 40 inputs, 300 words,
// chunks of 32 rows, label smoothing 0.1, with the float64 copies of its values for the reference.
type xentAMXCase struct {
	x, w, b       []float32
	x64, w64, b64 []float64
	targets       []int
}

// The shape of xentAMXCase.
const (
	xentAMXRows, xentAMXIn, xentAMXVocab, xentAMXChunk, xentAMXPad, xentAMXSmoothing = 100, 40, 300, 32, 0, 0.1
)

// newXentAMXCase draws a xentAMXCase from rng.
func newXentAMXCase(rng *rand.Rand) xentAMXCase {
	fill := func(n int, scale float64) ([]float32, []float64) {
		s, s64 := make([]float32, n), make([]float64, n)
		for i := range s {
			s[i] = float32(rng.NormFloat64() * scale)
			s64[i] = float64(s[i])
		}
		return s, s64
	}
	var c xentAMXCase
	c.x, c.x64 = fill(xentAMXRows*xentAMXIn, 1)
	c.w, c.w64 = fill(xentAMXIn*xentAMXVocab, 0.2)
	c.b, c.b64 = fill(xentAMXVocab, 0.1)
	c.targets = make([]int, xentAMXRows)
	for r := range c.targets {
		c.targets[r] = rng.IntN(xentAMXVocab)
		if r%9 == 4 {
			c.targets[r] = xentAMXPad
		}
	}
	return c
}

// run runs OutputXent on the case with back's products (nil: float32) and returns the loss, dx, dw and db.
func (c xentAMXCase) run(back OutputBackend[float32]) (float64, []float32, []float32, []float32) {
	n, in, v := xentAMXRows, xentAMXIn, xentAMXVocab
	dx, dw, db, scratch := make([]float32, n*in), make([]float32, in*v), make([]float32, v), make([]float32, xentAMXChunk*v)
	loss := OutputXent(c.x, c.w, c.b, c.targets, xentAMXPad, n, in, v, xentAMXChunk, xentAMXSmoothing, dx, dw, db, scratch, back)
	return loss, dx, dw, db
}

// requireAMXRanAndRepeats fails t unless float32 products give other figures than amx's products, named
// products, gave (loss, dx, dw, db: AMX did run), and a second call with amx, whose operands reuse the first's
// storage, gives the same bits.
func (c xentAMXCase) requireAMXRanAndRepeats(t *testing.T, products string, amx *AMXOutput, loss float64, dx, dw, db []float32) {
	t.Helper()
	loss32, dx32, dw32, _ := c.run(nil)
	if loss32 == loss || slices.Equal(dx32, dx) || slices.Equal(dw32, dw) {
		t.Fatalf("%s products gave the float32 figures: AMX did not run", products)
	}
	again, dx2, dw2, db2 := c.run(amx)
	if again != loss || !slices.Equal(dx2, dx) || !slices.Equal(dw2, dw) || !slices.Equal(db2, db) {
		t.Fatalf("a second call gave other figures (loss %.17g, first %.17g)", again, loss)
	}
}

// reference is naiveOutputXent of the case in float64, its products' terms passed through round.
func (c xentAMXCase) reference(round func(float64) float64) (loss float64, dx, dw, db, absDx, absDw []float64) {
	return naiveOutputXent(c.x64, c.w64, c.b64, c.targets, xentAMXPad, xentAMXRows, xentAMXIn, xentAMXVocab, xentAMXSmoothing, round)
}

// TestOutputXentInBF16 runs OutputXent's products on AMX or AVX512-BF16 (AMXOutput) over several chunks, with pad
// rows and label smoothing, against the float64 computation whose products take their terms rounded to bfloat16
// (x, w and the logits' gradient G): each product's terms are then the same, so what remains is float32's
// summation and softmax, and G's rounding landing on the other side of a bfloat16 boundary (2^-8 of a term). The
// figures must differ from the float32 products' (the products did run in bfloat16), and a second call, whose
// operands reuse the first's storage, must give the same bits.
func TestOutputXentInBF16(t *testing.T) {
	skipWithoutBF16Products(t, false)
	amx, err := newAMXOutput(false)
	if err != nil {
		t.Fatal(err)
	}
	c := newXentAMXCase(rand.New(rand.NewPCG(9, 10)))
	bf16 := func(v float64) float64 { return float64(FromBF16(ToBF16(float32(v)))) }
	wantLoss, wantDx, wantDw, wantDb, absDx, absDw := c.reference(bf16)
	loss, dx, dw, db := c.run(amx)
	if d := math.Abs(loss - wantLoss); d > 1e-5*math.Abs(wantLoss) {
		t.Fatalf("loss %.9g, the rounded terms give %.9g", loss, wantLoss)
	}
	requireXentFigures(t, "", false, dx, dw, db, wantDx, wantDw, wantDb, absDx, absDw)
	c.requireAMXRanAndRepeats(t, "bfloat16", amx, loss, dx, dw, db)
}

// requireXentFigures fails t, naming the case what, unless OutputXent's dx, dw and db on AMX are within bounds
// of the float64 reference's (dx and dw with Σ|terms| absDx and absDw), and returns the worst error of dx and dw
// as a share of Σ|terms|. In bfloat16 (not split, the reference's terms rounded alike) the bound is 1e-6 plus
// 2^-8 of Σ|terms| (G's rounding may land on the other side of a bfloat16 boundary), and 1e-6 for db; split
// (bfloat16x3, the reference exact) 1e-7 plus 4·2^-17 of Σ|terms|, and 2e-5 for db (a sum of G over every row,
// its logits off by about 1e-5).
func requireXentFigures(t *testing.T, what string, split bool, dx, dw, db []float32, wantDx, wantDw, wantDb, absDx, absDw []float64) (worst float64) {
	t.Helper()
	for _, f := range []struct {
		name      string
		got       []float32
		want, abs []float64
	}{{"dx", dx, wantDx, absDx}, {"dw", dw, wantDw, absDw}, {"db", db, wantDb, nil}} {
		for i, want := range f.want {
			d, tol := math.Abs(float64(f.got[i])-want), 1e-6
			switch {
			case split && f.abs == nil:
				tol = 2e-5
			case split:
				tol = 1e-7 + f.abs[i]*4/(1<<17)
			case f.abs != nil:
				tol += f.abs[i] / 256
			}
			if f.abs != nil && f.abs[i] > 0 {
				worst = max(worst, d/f.abs[i])
			}
			if d > tol {
				t.Fatalf("%s%s[%d] = %.9g, the reference gives %.9g (off by %.3g, tolerance %.3g)", what, f.name, i, f.got[i], want, d, tol)
			}
		}
	}
	return worst
}

// TestOutputXentInBF16x3 runs OutputXent's products split (bfloat16x3, NewAMXOutputs(n, true)) over several chunks,
// with pad rows and label smoothing, against the float64 computation with exact products: each term of a product
// is off by a relative 3·2^-17 at most, so dx and dw must be within that of Σ|terms| (plus float32's summation
// and softmax), and the loss within 1e-6. The figures must differ from the float32 products' (AMX did run), and
// a second call must give the same bits.
func TestOutputXentInBF16x3(t *testing.T) {
	skipWithoutAMX(t)
	amx, err := newAMXOutput(true)
	if err != nil {
		t.Fatal(err)
	}
	c := newXentAMXCase(rand.New(rand.NewPCG(11, 12)))
	exact := func(v float64) float64 { return v }
	wantLoss, wantDx, wantDw, wantDb, absDx, absDw := c.reference(exact)
	loss, dx, dw, db := c.run(amx)
	if d := math.Abs(loss - wantLoss); d > 1e-6*math.Abs(wantLoss) {
		t.Fatalf("loss %.9g, float64 gives %.9g", loss, wantLoss)
	}
	worst := requireXentFigures(t, "", true, dx, dw, db, wantDx, wantDw, wantDb, absDx, absDw)
	t.Logf("worst error of dx and dw: %.3g of Σ|terms|", worst)
	c.requireAMXRanAndRepeats(t, "bfloat16x3", amx, loss, dx, dw, db)
}

// TestAMXOutputsShareTheWeights runs OutputXent on two AMXOutputs made together (NewAMXOutputs), at once on two
// goroutines, each with its own rows, and requires each result bit for bit as an AMXOutput of its own gives it;
// then changes the weights in place and requires, after WeightsChanged, the new weights' results (the old packing
// would give the old ones, which the test checks differ), and with weights in other storage, a packing of those.
func TestAMXOutputsShareTheWeights(t *testing.T) {
	skipWithoutAMX(t)
	for _, split := range []bool{false, true} {
		shared, err := NewAMXOutputs(2, split)
		if err != nil {
			t.Fatal(err)
		}
		c := [2]xentAMXCase{newXentAMXCase(rand.New(rand.NewPCG(21, 1))), newXentAMXCase(rand.New(rand.NewPCG(22, 1)))}
		c[1].w = c[0].w // both rows' sets against the same weights
		check := func(when string) {
			t.Helper()
			var got [2][4]any
			var wg sync.WaitGroup
			for i := range c {
				wg.Add(1)
				go func() {
					defer wg.Done()
					loss, dx, dw, db := c[i].run(shared[i])
					got[i] = [4]any{loss, dx, dw, db}
				}()
			}
			wg.Wait()
			for i := range c {
				own, err := newAMXOutput(split)
				if err != nil {
					t.Fatal(err)
				}
				loss, dx, dw, db := c[i].run(own)
				if got[i][0] != loss || !slices.Equal(got[i][1].([]float32), dx) || !slices.Equal(got[i][2].([]float32), dw) ||
					!slices.Equal(got[i][3].([]float32), db) {
					t.Fatalf("split %v, %s: worker %d's figures differ from an AMXOutput of its own", split, when, i)
				}
			}
		}
		check("first call")
		before, _, _, _ := c[0].run(shared[0])
		for j := range c[0].w {
			c[0].w[j] *= 1.5
		}
		shared[1].WeightsChanged()
		check("after WeightsChanged")
		if after, _, _, _ := c[0].run(shared[0]); after == before {
			t.Fatalf("split %v: the same loss with the weights scaled", split)
		}
		w := slices.Clone(c[0].w)
		w[0] += 1
		c[0].w, c[1].w = w, w
		check("weights in other storage")
	}
}
