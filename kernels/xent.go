package kernels

import (
	"math"
	"sync"
)

// OutputXent is the output layer, log-softmax and cross-entropy fused, with its gradient computed in the same
// pass. It never holds more than chunk rows of logits, so memory does not grow with steps × vocabulary.
//
//	x (n, in), w (in, v), b (v), targets (n): rows whose target is pad contribute nothing.
//	z_r = x_r w + b,  q_r = (1−ε)·onehot(targets_r) + ε/v   (label smoothing ε; 0: plain cross-entropy)
//	loss = Σ_r −Σ_j q_rj log softmax(z_r)_j = Σ_r lse(z_r) − (1−ε) z_{r,y} − (ε/v) Σ_j z_rj
//	dx = G wᵀ, dw = xᵀ G, db = Σ_r G_r, with G_r = softmax(z_r) − q_r (0 on pad rows)
//
// The smoothed target is PyTorch's CrossEntropyLoss(label_smoothing=ε). dx, dw and db are overwritten.
// scratch must hold chunk·v values.
//
// The three matrix products, x w, G wᵀ and xᵀ G, are back's (OutputOf; nil: float32 products on Gemm's BLAS).
// An AMXOutput takes their terms rounded to bfloat16, or split in two (bfloat16x3), and sums them in float32 on
// Intel AMX's tile registers, or rounded, where AMX does not run, on AVX512-BF16's VDPBF16PS. The softmax, the
// loss, db and everything outside the products stay float32 (the loss's sums float64).
func OutputXent[T Float](x, w, b []T, targets []int, pad, n, in, v, chunk int, smoothing float64, dx, dw, db, scratch []T, back OutputBackend[T]) (loss float64) {
	if amx, ok := any(back).(*AMXOutput); ok && amx.teamOn() {
		return amx.teamXent(any(x).([]float32), any(w).([]float32), any(b).([]float32), targets, pad, n, in, v, chunk, smoothing,
			any(dx).([]float32), any(dw).([]float32), any(db).([]float32), any(scratch).([]float32))
	}
	clear(dw)
	clear(db)
	var mul OutputProducts[T] = gemmProducts[T]{}
	if back != nil {
		mul = back.Products(w, in, v)
	}
	losses := make([]float64, min(chunk, n))
	for start := 0; start < n; start += chunk {
		rows := min(chunk, n-start)
		xc := x[start*in : (start+rows)*in]
		g := scratch[:rows*v]
		// logits = x_c w + b
		mul.Logits(xc, w, g, rows, in, v)
		// Rows are independent: the softmax of each is shared out over the cores (between the products, which
		// OpenBLAS already spreads). Losses are kept per row and summed in row order, and db is summed column by
		// column in row order, so the result is the serial one bit for bit, whatever the number of workers.
		rowLoss := losses[:rows]
		Parallel(rows, xentRowGrain, func(lo, hi int) {
			xentRows(g[lo*v:hi*v], b, targets[start+lo:start+hi], pad, smoothing, rowLoss[lo:hi])
		})
		for r := 0; r < rows; r++ {
			if targets[start+r] != pad {
				loss += rowLoss[r]
			}
		}
		Parallel(v, xentColumnGrain, func(lo, hi int) {
			dbc := db[lo:hi]
			for r := 0; r < rows; r++ {
				if targets[start+r] == pad {
					continue
				}
				Axpy(1, g[r*v+lo:r*v+hi], dbc)
			}
		})
		// dw += x_cᵀ G;  dx_c = G wᵀ
		mul.Backward(xc, w, g, dw, dx[start*in:(start+rows)*in], rows, in, v)
	}
	return loss
}

// OutputBackend is a precision back-end of the output layer: the products of OutputXent in its number format.
// AMXOutput is one (bfloat16 and bfloat16x3); float32 products on Gemm's BLAS need none. A new one is a type with
// this method, given to OutputXent (kernels/backend_test.go adds a tiny one).
type OutputBackend[T Float] interface {
	// Products returns the products of one call of OutputXent by the weights w (in, v), which do not change
	// during the call.
	Products(w []T, in, v int) OutputProducts[T]
}

// OutputProducts are OutputXent's matrix products over a chunk of rows, in a back-end's number format.
type OutputProducts[T Float] interface {
	// Logits sets g (rows, v) = xc (rows, in) w (in, v).
	Logits(xc, w, g []T, rows, in, v int)
	// Backward adds xcᵀ g to dw (in, v) and sets dx (rows, in) = g wᵀ.
	Backward(xc, w, g, dw, dx []T, rows, in, v int)
}

// OutputOf is the back-end of OutputXent that m multiplies with in T: its AMXOutput in bfloat16 (float32 data
// only), or nil, float32 products on Gemm's BLAS, for a nil m, float32 products or other data.
func OutputOf[T Float](m *Multiplier) OutputBackend[T] {
	if amx := m.OutputScratch(); amx != nil {
		if back, ok := any(amx).(OutputBackend[T]); ok {
			return back
		}
	}
	return nil
}

// gemmProducts are OutputXent's products in T, on Gemm's BLAS.
type gemmProducts[T Float] struct{}

// Logits sets g = xc w.
func (gemmProducts[T]) Logits(xc, w, g []T, rows, in, v int) {
	Gemm(false, false, rows, v, in, 1, xc, in, w, v, 0, g, v)
}

// Backward adds xcᵀ g to dw and sets dx = g wᵀ.
func (gemmProducts[T]) Backward(xc, w, g, dw, dx []T, rows, in, v int) {
	Gemm(true, false, in, v, rows, 1, xc, in, g, v, 1, dw, v)
	Gemm(false, true, rows, in, v, 1, g, v, w, v, 0, dx, in)
}

// AMXOutput is the scratch of OutputXent's products on Intel AMX's tile registers (or, rounded and where AMX
// does not run, on AVX512-BF16's VDPBF16PS, which reads the same packed operands): the weights packed both ways
// (w and wᵀ), and a chunk's operands. In bfloat16 (NewAMXOutputs(n, false), train.precision bf16) each term is rounded to
// bfloat16 (a relative 2^-9 each); each product of two bfloat16 terms is exact in float32, so a sum is off the
// float64 sum of the rounded terms by float32 summation only, and the rounding is the whole difference from
// float32 products. Split (bfloat16x3, NewAMXOutputs(n, true)) each term is two bfloat16s, x ≈ hi + lo, and each
// product sums hi·hi + hi·lo + lo·hi: three products' work, terms off by a relative 2^-16 at most, about
// float32's summation error over a few hundred terms. One AMXOutput serves one goroutine at a time: the graphs of
// one training worker, which run one after another, share it. Its storage grows to the largest chunk and stays.
//
// The AMXOutputs made together (NewAMXOutputs), one for each training worker, share one packing of the weights, made once after each
// WeightsChanged: each call packs what no other is packing at that moment and waits for the rest, so two workers
// pack w and wᵀ at once, each one of them, and hold one copy between them.
type AMXOutput struct {
	split    bool
	dp       bool            // AMX does not run here: the products run on VDPBF16PS (dpMul)
	weights  *amxOutputPacks // w (in, v) and wᵀ (v, in), right operands of x w and G wᵀ
	x, xt, g amxA            // a chunk's x (rows, in) and xᵀ (in, rows), and G (rows, v), left operands
	gb       amxB            // G (rows, v), right operand of xᵀ G
	rank     int             // its rank in its OutputTeam while the team is on
	logits   []float32       // a team's chunk of logits when OutputXent's scratch is too short for it
}

// amxOutputPacks are the output layer's weights packed both ways, w for x w and wᵀ for G wᵀ, and the packings of
// other weights that AMXGemms share between the workers (Multiplier.AMXGemm), by name.
type amxOutputPacks struct {
	w, wt amxPack
	mu    sync.Mutex // guards gemms
	gemms map[string]*amxPack
	team  *OutputTeam // the AMXOutputs' team, which shares out the vocabulary
}

// gemmPack returns the packing called name that AMXOutputs made together share, made on its first call.
func (s *AMXOutput) gemmPack(name string) *amxPack {
	p := s.weights
	p.mu.Lock()
	defer p.mu.Unlock()
	return named(p.gemms, name, func() *amxPack { return &amxPack{} })
}

// amxPack is one packing of the weights, with the lock its packer holds and what it was packed from.
type amxPack struct {
	mu      sync.Mutex
	b       amxB
	current bool     // packed from the weights as they are now (false after WeightsChanged)
	from    *float32 // the first weight it was packed from
}

// NewAMXOutputs returns n scratches of OutputXent's products on AMX, in bfloat16 or split (bfloat16x3), that
// share one packing of the weights: the weights must not change between calls of OutputXent without a call of
// WeightsChanged on one of them, while none of them is in use. It returns an error saying why AMX cannot run here
// (a CPU without AMX-BF16, another architecture, or an OS that refuses the tile registers); unsplit, where AMX
// does not run but AVX512-BF16 does, the products run on VDPBF16PS (Choose says which).
func NewAMXOutputs(n int, split bool) ([]*AMXOutput, error) {
	if err := bf16Permit(split); err != nil {
		return nil, err
	}
	packs := &amxOutputPacks{gemms: map[string]*amxPack{}}
	packs.team = &OutputTeam{packs: packs}
	packs.team.cond.L = &packs.team.mu
	dp := amxPermit() != nil
	outs := make([]*AMXOutput, n)
	for i := range outs {
		outs[i] = &AMXOutput{split: split, dp: dp, weights: packs}
	}
	return outs, nil
}

// WeightsChanged says that the weights have changed since the last call of OutputXent, so that the AMXOutputs made
// together with s (NewAMXOutputs) pack them again, and so do the AMXGemms of their Multipliers (Multiplier.AMXGemm). Call it while
// none of them is in use.
func (s *AMXOutput) WeightsChanged() {
	p := s.weights
	p.w.current, p.wt.current = false, false
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, q := range p.gemms {
		q.current = false
	}
}

// Split reports whether the products are bfloat16x3 (NewAMXOutputs(n, true)).
func (s *AMXOutput) Split() bool { return s.split }

// amxProducts are OutputXent's products on an AMXOutput whose weights are packed for the call.
type amxProducts struct{ s *AMXOutput }

// Products packs w (in, v) and wᵀ, rounded or split, for a call of OutputXent and returns its products: those
// not yet packed since WeightsChanged, packing first what no other AMXOutput is packing and then waiting for the
// rest.
func (s *AMXOutput) Products(w []float32, in, v int) OutputProducts[float32] {
	p := s.weights
	packs := []struct {
		pack         *amxPack
		k, n, rs, cs int
	}{{&p.w, in, v, v, 1}, {&p.wt, v, in, 1, v}}
	busy := make([]bool, len(packs))
	for i, q := range packs {
		if busy[i] = !q.pack.mu.TryLock(); !busy[i] {
			q.pack.ensure(w, q.k, q.n, q.rs, q.cs, s.split)
			q.pack.mu.Unlock()
		}
	}
	for i, q := range packs {
		if busy[i] {
			q.pack.mu.Lock()
			q.pack.ensure(w, q.k, q.n, q.rs, q.cs, s.split)
			q.pack.mu.Unlock()
		}
	}
	return amxProducts{s}
}

// ensure packs w's (k, n) matrix whose element (i, j) is w[i*rs+j*cs] unless the pack is current, from w, with
// that shape and split. Its caller holds the lock.
func (q *amxPack) ensure(w []float32, k, n, rs, cs int, split bool) {
	if q.current && q.from == &w[0] && q.b.is(k, n, split) {
		return
	}
	q.b.fit(k, n, split)
	q.b.round(w, rs, cs)
	q.current, q.from = true, &w[0]
}

// Logits sets g = xc w, xc rounded.
func (p amxProducts) Logits(xc, w, g []float32, rows, in, v int) {
	p.s.x.fit(rows, in, p.s.split)
	p.s.x.round(xc, in, 1)
	mustAMX(p.s.product(&p.s.x, &p.s.weights.w.b, g, v, false))
}

// Backward adds xcᵀ g to dw and sets dx = g wᵀ, xc and g rounded.
func (p amxProducts) Backward(xc, w, g, dw, dx []float32, rows, in, v int) {
	s := p.s
	s.xt.fit(in, rows, s.split)
	s.xt.round(xc, 1, in)
	s.gb.fit(rows, v, s.split)
	s.gb.round(g, v, 1)
	mustAMX(s.product(&s.xt, &s.gb, dw, v, true))
	s.g.fit(rows, v, s.split)
	s.g.round(g, v, 1)
	mustAMX(s.product(&s.g, &s.weights.wt.b, dx, in, false))
}

// mustAMX panics on an error of AMXOutput.product: NewAMXOutputs checked that its products run, and OutputXent's
// shapes fit.
func mustAMX(err error) {
	if err != nil {
		panic(err)
	}
}

// xentRowGrain and xentColumnGrain are the fewest rows, and vocabulary columns, worth a goroutine of their own
// in OutputXent: a row is a softmax over the vocabulary (thousands of exps), a column a sum over the chunk's rows.
const (
	xentRowGrain    = 16
	xentColumnGrain = 512
)

// XentRow is the loss of one row of the output layer, forward and backward at once: it turns a row of logits z
// into the gradient softmax(z) − q in place and returns the loss lse(z) − (1−ε) z_y − (ε/V) Σ_j z_j, with
// q = (1−ε)·onehot(y) + ε/V (label smoothing ε). With ε = 0 it is the plain −log softmax(z)_y = lse(z) − z_y, bit
// for bit. The loss is taken from the logits rather than log(p), which can underflow.
func XentRow[T Float](row []T, y int, smoothing float64) float64 {
	var losses [1]float64
	xentGroup(&[5][]T{row}, 1, &[5]int{}, []int{y}, smoothing, losses[:])
	return losses[0]
}

// xentRows is XentRow for each row of rows (len(targets) rows of len(b) logits) after adding b to it, with the
// same figures to the last bit: each row becomes its gradient and losses[r] its loss. A row whose target is pad
// becomes zeros, with a loss of 0. It runs up to five rows side by side (expShiftedGroup), which overlaps their
// chains of float64 additions, and each pass over a row in AVX2 where the CPU has it; OutputXent's rows take
// most of its time outside the matrix products.
func xentRows[T Float](rows, b []T, targets []int, pad int, smoothing float64, losses []float64) {
	biasedGroups(rows, b, targets, pad, func(r int, row []T) {
		clear(row)
		losses[r] = 0
	}, func(group *[5][]T, n int, at *[5]int) { xentGroup(group, n, at, targets, smoothing, losses) })
}

// biasedGroups adds b to each row of rows (len(targets) rows of len(b) values) whose target is not pad and hands
// those rows to flush five at a time (fewer in the last group), with their indices, to be taken side by side;
// it calls padRow for each row whose target is pad instead.
func biasedGroups[T Float](rows, b []T, targets []int, pad int, padRow func(r int, row []T), flush func(group *[5][]T, n int, at *[5]int)) {
	v := len(b)
	var group [5][]T
	var at [5]int
	n := 0
	for r, y := range targets {
		row := rows[r*v : (r+1)*v]
		if y == pad {
			padRow(r, row)
			continue
		}
		Axpy(1, b, row)
		group[n], at[n] = row, r
		n++
		if n == len(group) {
			flush(&group, n, &at)
			n = 0
		}
	}
	if n > 0 {
		flush(&group, n, &at)
	}
}

// xentGroup is XentRow for the first n rows of group, whose targets are targets[at[g]] and whose losses go to
// losses[at[g]]: XentRow is a group of one.
func xentGroup[T Float](group *[5][]T, n int, at *[5]int, targets []int, smoothing float64, losses []float64) {
	v := len(group[0])
	hit, spread := 1-smoothing, smoothing/float64(v)
	var zsum, sum [5]float64
	var maxv [5]T
	if smoothing != 0 {
		addSideBySide(&zsum, group, n)
	}
	var zy [5]float64
	for g := range n {
		zy[g] = float64(group[g][targets[at[g]]])
	}
	expShiftedGroup(group, group, n, &maxv, &sum)
	for g := range n {
		row := group[g]
		scale(row, T(1/sum[g]))
		losses[at[g]] = float64(maxv[g]) + math.Log(sum[g]) - hit*zy[g] - spread*zsum[g]
		row[targets[at[g]]] -= T(hit)
		if smoothing != 0 {
			s := T(spread)
			for j := range row {
				row[j] -= s
			}
		}
	}
}
