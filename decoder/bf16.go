package decoder

import (
	"math"
	"slices"

	"github.com/attend-nmt/attend/kernels"
)

// bf16Output is a decoder's output layer on bfloat16 products (kernels.AMXWeights: on Intel AMX's tile
// registers, about seven times OpenBLAS's float32 products, where they run, on AVX512-BF16, twice as fast as
// float32 on AMD's CPUs, elsewhere, and in plain Go for tests), with what a search needs to rescore words exactly
// (bf16Search): W_out's columns and b_out in float32, and the norms of the columns and of what rounding them took
// off, from which bf16Search bounds each logit's error.
type bf16Output struct {
	amx     *kernels.AMXWeights // the weights rounded to bfloat16
	wT      []float32           // (Vocab, OutIn): W_out's columns, for rescoring
	bias    []float32           // a copy of b_out: the bound was computed from it
	k       int
	maxBias float64 // max|b|
	// maxNorm is max_col ‖w_col‖₂, roundNorm max_col ‖w̃_col‖₂ of the columns rounded to bf16 and residual
	// max_col ‖w_col − w̃_col‖₂.
	maxNorm, roundNorm, residual float64
}

// newBF16Output makes the bf16 output layer of the row-major (k, vocab) weights w and the bias b, its products
// on kernels.AMXWeights, or returns nil when a weight or bias is not finite (their bound would be meaningless)
// or the products cannot be made.
func newBF16Output(w, b []float32, k, vocab int) *bf16Output {
	o := &bf16Output{wT: make([]float32, vocab*k), bias: slices.Clone(b), k: k}
	for v := 0; v < vocab; v++ {
		var sq, tsq, rsq float64
		col := o.wT[v*k : (v+1)*k]
		for i := range col {
			col[i] = w[i*vocab+v]
			sq += float64(col[i]) * float64(col[i])
			t := float64(kernels.FromBF16(kernels.ToBF16(col[i])))
			tsq += t * t
			rsq += (float64(col[i]) - t) * (float64(col[i]) - t)
		}
		o.maxNorm = max(o.maxNorm, math.Sqrt(sq))
		o.roundNorm, o.residual = max(o.roundNorm, math.Sqrt(tsq)), max(o.residual, math.Sqrt(rsq))
		o.maxBias = max(o.maxBias, math.Abs(float64(b[v])))
	}
	if math.IsNaN(o.maxNorm) || math.IsInf(o.maxNorm, 0) || math.IsNaN(o.maxBias) || math.IsInf(o.maxBias, 0) {
		return nil
	}
	var err error
	if o.amx, err = kernels.NewAMXWeights(w, k, vocab); err != nil {
		return nil
	}
	return o
}

// score is word v's logit in float64: x·W_out[:, v] + b_v (kernels.DotF64).
func (o *bf16Output) score(x []float32, v int) float64 {
	return kernels.DotF64(x, o.wT[v*o.k:(v+1)*o.k]) + float64(o.bias[v])
}

// bf16For returns the output layer in bfloat16 (bf16Output, on kernels.AMXWeights, which runs on AVX512-BF16
// where AMX does not) for a search on products p, or nil for float32 products, when T is not float32 or when a
// weight is not finite. A search rescores on it the words that can matter (bf16Search). It copies the output
// layer's weights (two copies, 1.5 times their size) at its first call, which later calls share: call it once
// the weights are final.
func (d *Decoder[T]) bf16For(p kernels.Products) *bf16Output {
	if p.Float32() {
		return nil
	}
	d.bf16Mu.Lock()
	defer d.bf16Mu.Unlock()
	if d.bf16 == nil {
		d.useBF16()
	}
	return d.bf16
}

// useBF16 makes d.bf16 from the output layer when T is float32. It runs on any CPU (kernels.AMXWeights sums in
// plain Go without AMX or AVX512-BF16, as tests do there).
func (d *Decoder[T]) useBF16() {
	w, ok := any(d.OutW.Data).([]float32)
	if !ok {
		return
	}
	d.bf16 = newBF16Output(w, any(d.OutB.Data).([]float32), d.OutIn(), d.Cfg.Vocab)
}

// bf16Search is one search's output layer on bfloat16 products (a greedy or beam search of a Decoder alone on
// bfloat16 Output.Products), with the words that can matter rescored exactly, so that the search chooses the
// words that exact logits choose. Each row's logits are computed on kernels.AMXWeights (bfloat16 terms, float32
// sums), each within δ_r of its exact value, δ_r the bound of bf16Search.bound: the rounding that took place,
// ‖x_r − x̃_r‖₂·max‖w̃_col‖₂ + ‖x_r‖₂·max‖w_col − w̃_col‖₂, plus float32 summation and the bias's addition.
// Then every word whose bf16 logit is within 2δ_r of the row's n-th best bf16 logit is rescored exactly (float64
// sums of the float32 terms, rounded to float32), n being the words of a row that must be exact: 1 for greedy
// search, 2k for a beam search of width k (a block's 2k candidates may all come from one row). Those include the
// row's exact top n — a word below that threshold is below n words whose exact logits are each at least the n-th
// best bf16 one minus δ_r — and, being exact, they rank the same as exact logits rank, above every word left in
// bf16. So greedy search picks the word of the largest exact logit rounded to float32 (the first on ties): the
// word float32 products pick, but where two words' logits are within float32 rounding of each other.
//
// Both kernels behind AMXWeights sum in float32 products of bfloat16 terms that are exact in float32: VDPBF16PS
// and AMX's TDPBF16PS add a pair of products to the running sum at a time, at most two roundings per pair, K in
// all, within the 2K·2^-24 allowed. Both treat bfloat16 subnormals as zero and flush float32 subnormal sums to
// zero: absolute errors below K·2^-126·max|w| and K·2^-126, far inside the bound's absolute term of 2^-20.
//
// Beam search needs every word's log-probability: the logit minus the log-sum-exp of the whole row. The
// log-sum-exp, over the rescored words' exact logits and the other words' bf16 ones, errs by at most
// β_r = x/(1−x), x = (e^δ_r − 1)·p_N, where p_N is the exact share of the probability held by the words not
// rescored (at most e^{2δ_r} times their share under the mixed logits, which the search computes from the
// log-sum-exp), and never by more than δ_r. So every extension of row r has a log-probability within β_r (plus
// float32's rounding of the exact logit) of the one exact logits give, and a hypothesis's log-probability is
// within the sum of its steps' β of that (Scored.Bound). The float32 arithmetic the search does either way, its
// log-sum-exps' own rounding, is not in the bound.
type bf16Search struct {
	o        *bf16Output
	cands    int // the words of a row that must be exact: 1, or 2k (the candidates of a beam search's block)
	in       *kernels.AMXInput
	c        []float32 // the logits: AMX's padded product, Stride apart, bias added and near words rescored
	delta    []float64 // each row's bound of its logits that were not rescored; 0 when all were
	rescored [][]int   // each row's rescored words
	rounding []float64 // each row's allowance for rounding its exact logits to float32
	parts    []bf16SearchPart
}

// bf16SearchPart is one goroutine's scratch for rescoring rows: a row's best bf16 logits, best first, and its words
// near enough to its best so far to rescore.
type bf16SearchPart struct {
	top  []float32
	near []int
}

// newBF16Search makes the scratch of a search over up to rows rows with the output layer o, computed by parts
// goroutines, whose rows must each have their cands best words exact (see bf16Search).
func newBF16Search(o *bf16Output, rows, cands, parts int) *bf16Search {
	f := &bf16Search{o: o, cands: cands, in: kernels.NewAMXInput(rows, o.k), c: make([]float32, o.amx.OutputLen(rows)),
		delta: make([]float64, rows), rescored: make([][]int, rows), rounding: make([]float64, rows), parts: make([]bf16SearchPart, parts)}
	for p := range f.parts {
		f.parts[p].top = make([]float32, 0, cands)
	}
	return f
}

// The logits of the output layer's inputs x (rows, OutIn) go into f.c, Stride apart: bf16 products, bias added,
// with the words that can be among a row's cands best rescored exactly, each row's δ and rescored words recorded.
// They take three passes, each of which several goroutines may share once the one before is done: round (rows
// from … to-1 of x to bf16), multiply (part p of parts of the product), rescore (rows from … to-1, on part p's
// scratch).

// round rounds rows from … to-1 of x to bf16.
func (f *bf16Search) round(x []float32, from, to int) { f.in.Round(x, f.o.k, from, to) }

// multiply computes part p of parts of the bf16 products of the first rows rows (their strips of columns).
func (f *bf16Search) multiply(rows, p, parts int) {
	strips := f.o.amx.Strips()
	if err := f.o.amx.Mul(f.in, rows, f.c, strips*p/parts, strips*(p+1)/parts); err != nil {
		panic(err) // the shapes were made to fit
	}
}

// rescoreRows rescores rows from … to-1 of the products (rescore), x being the inputs, on part p's scratch.
func (f *bf16Search) rescoreRows(x []float32, from, to, p int) {
	oi, v, ld := f.o.k, len(f.o.bias), f.o.amx.Stride()
	for r := from; r < to; r++ {
		f.rescore(r, x[r*oi:(r+1)*oi], f.in.Rounded(r), f.c[r*ld:r*ld+v], &f.parts[p])
	}
}

// rescore adds the bias to row r's bf16 products and rescores the words that can be among its cands best (see
// bf16Search) in place, x being the row's input and xt its bf16 bits, on the scratch part. One pass adds the bias,
// finds the cands best bf16 logits and keeps the words within 2δ of the cands-th best so far, a superset of those
// within 2δ of the final cands-th best, which it then rescores.
func (f *bf16Search) rescore(r int, x []float32, xt []uint16, row []float32, part *bf16SearchPart) {
	o := f.o
	bound, big := f.bound(x, xt)
	bias := o.bias[:len(row)]
	n := min(f.cands, len(row))
	top, cut := part.top[:n], float32(math.Inf(-1)) // the n best so far, best first; cut is the last
	for i := range top {
		top[i] = cut
	}
	near := part.near[:0] // words at or above keep
	keep := cut           // cut − 2δ, rounded down
	for v, a := range row {
		a += bias[v]
		row[v] = a
		if a < keep {
			continue
		}
		near = append(near, v)
		if a <= cut {
			continue
		}
		i := n - 1
		for ; i > 0 && top[i-1] < a; i-- {
			top[i] = top[i-1]
		}
		top[i] = a
		cut = top[n-1]
		keep = below(float64(cut) - 2*bound)
	}
	part.near = near
	ids := f.rescored[r][:0]
	if math.IsNaN(bound) || math.IsInf(bound, 0) || math.IsInf(float64(cut), 0) || math.IsNaN(float64(cut)) {
		for v := range row { // every word exact: no bound to speak of
			row[v] = float32(o.score(x, v))
			ids = append(ids, v)
		}
		f.rescored[r], f.delta[r], f.rounding[r] = ids, 0, 0
		return
	}
	for _, v := range near {
		if row[v] >= keep {
			row[v] = float32(o.score(x, v))
			ids = append(ids, v)
		}
	}
	// An exact logit rounded to float32 moves by at most 2^-24 of it.
	f.rescored[r], f.delta[r], f.rounding[r] = ids, bound, big/(1<<23)
}

// below returns the largest float32 at most t (−Inf for NaN).
func below(t float64) float32 {
	if math.IsNaN(t) {
		return float32(math.Inf(-1))
	}
	c := float32(t)
	if float64(c) > t {
		c = math.Nextafter32(c, float32(math.Inf(-1)))
	}
	return c
}

// bound returns how far any bf16 logit of the input x, rounded to the bf16 bits xt, can be from the exact one,
// and a bound on |logit|. With
// x̃ and w̃ the terms rounded to bf16 and r_x = x − x̃, r_w = w − w̃ what rounding took off,
//
//	x̃·w̃ − x·w = −r_x·w̃ − x·r_w, at most ‖r_x‖₂ max‖w̃_col‖₂ + ‖x‖₂ max‖r_w,col‖₂ (Cauchy–Schwarz),
//
// about a third of the 2u·‖x‖₂ max‖w_col‖₂ (u = kernels.BF16RoundOff) of assuming that every term rounded by
// the most it can; the float32 sum adds at most 2K·2^-24·‖x̃‖₂ max‖w̃_col‖₂, and adding the bias in float32
// 2^-24 of the logit and bias, which the absolute term (|logit| + max|b| + 1)·2^-20 covers for logits up to
// the bound on |logit| ‖x‖₂ max‖w_col‖₂ + max|b|. All is taken 1% larger for the rounding of the bound's own arithmetic.
func (f *bf16Search) bound(x []float32, xt []uint16) (bound, big float64) {
	o := f.o
	var sq, tsq, rsq float64 // ‖x‖², ‖x̃‖², ‖r_x‖²
	for i, xi := range x[:len(xt)] {
		t := float64(kernels.FromBF16(xt[i]))
		sq += float64(xi) * float64(xi)
		tsq += t * t
		rsq += (float64(xi) - t) * (float64(xi) - t)
	}
	norm := math.Sqrt(sq)
	big = norm*o.maxNorm*1.01 + o.maxBias
	gamma := 2 * float64(o.k) / (1 << 24)
	bound = 1.01*(math.Sqrt(rsq)*o.roundNorm+norm*o.residual+gamma*math.Sqrt(tsq)*o.roundNorm) + (big+o.maxBias+1)/(1<<20)
	return bound, big
}

// spread moves the first step's rows, one per sentence, to rows j·k, as spreadRows moves their logits.
func (f *bf16Search) spread(sents, k int) {
	for j := sents - 1; j > 0 && k > 1; j-- {
		f.delta[j*k], f.rounding[j*k] = f.delta[j], f.rounding[j]
		f.rescored[j*k], f.rescored[j] = f.rescored[j], f.rescored[j*k]
	}
}

// lseBound returns how far the log-probabilities of row's words, logits the row's mixed logits and lse their
// log-sum-exp, can be from those of exact logits (β_r of bf16Search, plus the rounding of the exact logits).
func (f *bf16Search) lseBound(row int, logits []float32, lse float64) float64 {
	delta := f.delta[row]
	if delta == 0 {
		return f.rounding[row]
	}
	var rescued float64 // the rescored words' share of the probability under the mixed logits
	for _, v := range f.rescored[row] {
		rescued += math.Exp(float64(logits[v]) - lse)
	}
	q := min(1, math.Exp(2*delta)*max(0, 1-rescued))
	beta := delta
	if x := math.Expm1(delta) * q; x < 1 {
		beta = min(delta, x/(1-x))
	}
	if math.IsNaN(beta) {
		beta = delta
	}
	return beta + f.rounding[row]
}
