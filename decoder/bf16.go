package decoder

import (
	"math"
	"slices"

	"github.com/attend-nmt/attend/kernels"
)

// bf16Output is greedy search's output layer on bfloat16 products (kernels.AMXWeights: on Intel AMX's tile
// registers, about seven times OpenBLAS's float32 products, where they run and on AVX512-BF16, twice as fast as
// float32 on AMD's CPUs, elsewhere), with the same choice of word: it scores
// the whole vocabulary in bf16, bounds how far each bf16 logit can be from the true one, and rescores in float64 every word whose bf16 logit is close
// enough to the best to be the true best. So each step picks the word whose float64 logit is largest (the
// first on ties), as a float64 output layer would; only the words within the error bound of the best, a few
// per step, cost a rescoring.
//
// The bound: rounding x and w to bf16 moves each term x_k·w_k by at most (2u+u²)|x_k w_k| (u = 2^-8), and the
// float32 sum of K terms adds at most about K·2^-24 of Σ|x_k w_k|; Σ|x_k w_k| ≤ ‖x‖₂‖w_col‖₂ (Cauchy–Schwarz).
// So each logit is within slope·‖x‖₂ (plus a little for adding the bias in float32) of the true one, and every
// word whose bf16 logit is below the best bf16 logit by more than twice that is truly worse than that best word.
// Both kernels sum in float32 products of bfloat16 terms that are exact in float32: VDPBF16PS and AMX's TDPBF16PS
// add a pair of products to the running sum at a time, at most two roundings per pair, K in all, within the
// 2K·2^-24 allowed. Both treat bfloat16 subnormals as zero and flush float32 subnormal sums to zero: absolute
// errors below K·2^-126·max|w| and K·2^-126, far inside the bound's absolute term of 2^-20.
type bf16Output struct {
	amx  *kernels.AMXWeights // the weights rounded to bfloat16
	wT   []float32           // (Vocab, OutIn): W_out's columns, for rescoring
	bias []float32           // a copy of b_out: the bound below was computed from it
	k    int
	// slope is the error bound per unit of ‖x‖₂: 1.01·(2u+u²+2K·2^-24)·max_col ‖w_col‖₂.
	slope   float64
	maxBias float64
	// maxNorm is max_col ‖w_col‖₂, roundNorm max_col ‖w̃_col‖₂ of the columns rounded to bf16 and residual
	// max_col ‖w_col − w̃_col‖₂: beam search's bound (bf16Beam.bound) uses the rounding that took place.
	maxNorm, roundNorm, residual float64
}

// newBF16Output makes the bf16 output layer of the row-major (k, vocab) weights w and the bias b, its products
// on kernels.AMXWeights, or returns nil when a weight or bias is not finite (their bound would be meaningless)
// or the products cannot be made.
func newBF16Output(w, b []float32, k, vocab int) *bf16Output {
	o := &bf16Output{wT: make([]float32, vocab*k), bias: slices.Clone(b), k: k}
	var maxNorm float64
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
		maxNorm = max(maxNorm, math.Sqrt(sq))
		o.roundNorm, o.residual = max(o.roundNorm, math.Sqrt(tsq)), max(o.residual, math.Sqrt(rsq))
		o.maxBias = max(o.maxBias, math.Abs(float64(b[v])))
	}
	if math.IsNaN(maxNorm) || math.IsInf(maxNorm, 0) || math.IsNaN(o.maxBias) || math.IsInf(o.maxBias, 0) {
		return nil
	}
	var err error
	if o.amx, err = kernels.NewAMXWeights(w, k, vocab); err != nil {
		return nil
	}
	o.maxNorm = maxNorm
	u := kernels.BF16RoundOff
	o.slope = 1.01 * (2*u + u*u + 2*float64(k)/(1<<24)) * maxNorm
	return o
}

// best returns the word with the largest float64 logit for the output-layer input x (OutIn values) whose bf16
// logits, bias added, are approx, and how many words it rescored.
func (o *bf16Output) best(x, approx []float32) (word, rescored int) {
	var sq float64
	for _, xi := range x {
		sq += float64(xi) * float64(xi)
	}
	j := kernels.Argmax(approx)
	m := float64(approx[j])
	if math.IsNaN(sq) || math.IsInf(sq, 0) || math.IsNaN(m) || math.IsInf(m, 0) {
		return o.bestOfAll(x), len(approx)
	}
	bound := o.errorBound(sq, m)
	threshold := float32(m - 2*bound)
	if float64(threshold) > m-2*bound { // float32 rounded it up: take the next one down
		threshold = math.Nextafter32(threshold, float32(math.Inf(-1)))
	}
	word, best := j, o.score(x, j)
	rescored = 1
	for v, a := range approx {
		if a < threshold || v == j {
			continue
		}
		rescored++
		if s := o.score(x, v); s > best || s == best && v < word {
			word, best = v, s
		}
	}
	return word, rescored
}

// errorBound is how far a bf16 logit can be from the true one for an input of squared norm sq, when the best
// bf16 logit is m.
func (o *bf16Output) errorBound(sq, m float64) float64 {
	return o.slope*math.Sqrt(sq) + (math.Abs(m)+o.maxBias+1)/(1<<20)
}

// bestOfAll is best by rescoring every word: the way out when x or the logits are not finite.
func (o *bf16Output) bestOfAll(x []float32) int {
	word, best := 0, math.Inf(-1)
	for v := range o.bias {
		if s := o.score(x, v); s > best { // NaN never wins
			word, best = v, s
		}
	}
	return word
}

// score is word v's logit in float64: x·W_out[:, v] + b_v (kernels.DotF64).
func (o *bf16Output) score(x []float32, v int) float64 {
	return kernels.DotF64(x, o.wT[v*o.k:(v+1)*o.k]) + float64(o.bias[v])
}

// bf16For returns the output layer in bfloat16 (bf16Output, on kernels.AMXWeights, which runs on AVX512-BF16
// where AMX does not) for a search on products p, or nil for float32 products, when T is not float32 or when a
// weight is not finite. The words chosen are those of float64 logits: the same as float32 products choose but
// where two words' logits are within float32 rounding of each other. It copies the output layer's weights (two
// copies, 1.5 times their size) at its first call, which later calls share: call it once the weights are final.
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
