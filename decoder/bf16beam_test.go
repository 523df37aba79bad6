package decoder

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/attend-nmt/attend/kernels"
	"github.com/attend-nmt/attend/param"
)

// skipWithoutFasterBF16 skips t where translate keeps beam search on float32 products: without AMX, and without AMD's
// AVX512-BF16.
func skipWithoutFasterBF16(t *testing.T) {
	if p, _ := kernels.Choose(kernels.PrecisionAuto); p.Float32() {
		t.Skip("bfloat16 products are not faster here")
	}
}

// TestBF16BeamRescoresTheBest computes the logits of 45 random inputs (two 32-row blocks, the second partial)
// with a bf16 output layer (AMXWeights) of 37 inputs and 500 words, logits spread over several units as a trained
// model's are, and checks each row against float64 logits summed here: the row's 2k = 10 best words must be the
// exact 10 best and their logits exact (to float32 rounding), every other logit within the row's δ, and the
// log-sum-exp of the mixed logits within lseBound of the exact one. Rescoring too few words, or none, fails the
// first check; a bound that forgets the words left in bf16 fails the last.
func TestBF16BeamRescoresTheBest(t *testing.T) {
	const k, vocab, rows, width = 37, 500, 45, 5
	rng := rand.New(rand.NewPCG(10, 11))
	w := make([]float32, k*vocab)
	for i := range w {
		w[i] = float32(rng.NormFloat64() * 0.6)
	}
	bias := make([]float32, vocab)
	for v := range bias {
		bias[v] = float32(rng.NormFloat64())
	}
	o := newBF16Output(w, bias, k, vocab)
	f := newBF16Search(o, rows, 2*width, 1)
	x := make([]float32, rows*k)
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	f.round(x, 0, rows)
	f.multiply(rows, 0, 1)
	f.rescoreRows(x, 0, rows, 0)
	ld := o.amx.Stride()
	var rescored, lseErr, lseBound float64
	for r := 0; r < rows; r++ {
		row := f.c[r*ld : r*ld+vocab]
		exact := make([]float64, vocab)
		for v := range exact {
			s := float64(bias[v])
			for i := k - 1; i >= 0; i-- {
				s += float64(x[r*k+i]) * float64(w[i*vocab+v])
			}
			exact[v] = s
		}
		byExact, byMixed := rankWords(exact), rankWords(toFloat64(row))
		if !slices.Equal(byExact[:2*width], byMixed[:2*width]) {
			t.Fatalf("row %d: the mixed logits' best words %v, the exact ones' %v", r, byMixed[:2*width], byExact[:2*width])
		}
		for _, v := range byExact[:2*width] {
			if d := math.Abs(float64(row[v]) - exact[v]); d > f.rounding[r] {
				t.Fatalf("row %d, word %d: logit %.9g, exact %.9g: not rescored (δ %.3g)", r, v, row[v], exact[v], f.delta[r])
			}
		}
		for v, a := range row {
			if d := math.Abs(float64(a) - exact[v]); d > f.delta[r]+f.rounding[r] {
				t.Fatalf("row %d, word %d: logit %.9g is %.3g from the exact %.9g, beyond δ %.3g", r, v, a, d, exact[v], f.delta[r])
			}
		}
		mixed, exactLSE := logSumExp64(toFloat64(row)), logSumExp64(exact)
		bound := f.lseBound(r, row, mixed)
		if d := math.Abs(mixed - exactLSE); d > bound {
			t.Fatalf("row %d: log-sum-exp %.9g, exact %.9g: off by %.3g, beyond the bound %.3g (δ %.3g)", r, mixed, exactLSE, d, bound, f.delta[r])
		} else {
			lseErr, lseBound = max(lseErr, d), max(lseBound, bound)
		}
		rescored += float64(len(f.rescored[r]))
		if f.delta[r] == 0 || f.delta[r] > 1 {
			t.Fatalf("row %d: δ %.3g: the test wants a bound that is small but not 0", r, f.delta[r])
		}
	}
	t.Logf("%.1f words rescored a row; log-sum-exps off by up to %.3g, bounds up to %.3g", rescored/rows, lseErr, lseBound)
}

// rankWords returns the words by decreasing logit (ties: lower word first).
func rankWords(logits []float64) []int {
	ids := make([]int, len(logits))
	for i := range ids {
		ids[i] = i
	}
	slices.SortStableFunc(ids, func(a, b int) int {
		switch {
		case logits[a] > logits[b]:
			return -1
		case logits[a] < logits[b]:
			return 1
		}
		return 0
	})
	return ids
}

// toFloat64 converts x to float64.
func toFloat64(x []float32) []float64 {
	out := make([]float64, len(x))
	for i, v := range x {
		out[i] = float64(v)
	}
	return out
}

// logSumExp64 is log Σ e^x in float64.
func logSumExp64(x []float64) float64 {
	m := slices.Max(x)
	var s float64
	for _, v := range x {
		s += math.Exp(v - m)
	}
	return m + math.Log(s)
}

// TestBeamInBF16MatchesFloat32 decodes 60 random sentences with a beam of 5 (5-best lists) with a random decoder
// over 700 words, logits spread as a trained model's, with float32 products and with bf16 products on AMX (or
// AMD's AVX512-BF16) and rescoring (Output.Products). Every bf16 hypothesis that the float32 list also has must have a
// log-probability within its Bound (plus 1e-4 for float32's own rounding) of float32's; every float32 hypothesis
// whose score is apart from its neighbours' in the 5-best list by more than twice the sentence's largest bound
// plus that must be at the same place in bf16's list; and most lists must be the same. A rescoring that leaves the
// best words in bf16 fails the first check.
func TestBeamInBF16MatchesFloat32(t *testing.T) {
	skipWithoutFasterBF16(t)
	const vocab, width, tol = 700, 5, 1e-4
	set := param.NewSet[float32]()
	d, err := New(set, Config{Vocab: vocab, Emb: 12, Hidden: 20, MemDim: queueMemDim, Attn: 10}, nil)
	if err != nil {
		t.Fatal(err)
	}
	set.Pack()
	d.Init(rand.New(rand.NewPCG(4, 2)))
	for i := range d.OutW.Data {
		d.OutW.Data[i] *= 32
	}
	rng := rand.New(rand.NewPCG(6, 8))
	blocks := float32Blocks(randomBlocks(rng, randomLengths(rng, 6, 10, 9)))
	opts := BeamOptions{Width: width, NBest: width, MaxLen: 12}
	decode := func(products kernels.Products) [][]Scored {
		var out [][]Scored
		for _, b := range blocks {
			lists, err := Beam([]Session[float32]{d.Session(b.Enc, b.Lengths)}, b.Lengths[:b.Enc.Rows], b.Enc.SrcLen, vocab, queueBOS, queueEOS, opts,
				Output[float32]{Products: products})
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, lists...)
		}
		return out
	}
	want := decode(kernels.Float32Products())
	products, err := kernels.Choose(kernels.PrecisionBF16)
	if err != nil {
		t.Fatalf("bf16 products refused where they are faster: %v", err)
	}
	got := decode(products)
	var same, clear, matched int // clear: float32 hypotheses apart from their neighbours
	var worst, largest float64   // the largest error as a share of its bound; the largest bound
	for s := range want {
		key := func(h Scored) string { return fmt.Sprint(h.Tokens, h.Finished) }
		byKey := map[string]Scored{}
		for _, h := range want[s] {
			byKey[key(h)] = h
		}
		maxBound := 0.0
		for _, h := range got[s] {
			if h.Bound <= 0 {
				t.Fatalf("sentence %d: a bf16 hypothesis with bound %g", s, h.Bound)
			}
			maxBound, largest = max(maxBound, h.Bound), max(largest, h.Bound)
			ref, ok := byKey[key(h)]
			if !ok {
				continue
			}
			matched++
			if d := math.Abs(h.LogProb - ref.LogProb); d > h.Bound+tol {
				t.Fatalf("sentence %d, %v: log-probability %.9g, float32's %.9g: off by %.3g, beyond the bound %.3g", s, h.Tokens, h.LogProb, ref.LogProb, d, h.Bound)
			} else {
				worst = max(worst, d/(h.Bound+tol))
			}
		}
		equal := len(got[s]) == len(want[s])
		for i := 0; equal && i < len(got[s]); i++ {
			equal = key(got[s][i]) == key(want[s][i])
		}
		if equal {
			same++
		}
		// A hypothesis whose float32 score is apart from its neighbours' in the list by more than twice the
		// bounds must keep its place.
		for i := range want[s] {
			apart := (i == 0 || want[s][i-1].Score-want[s][i].Score > 2*(maxBound+tol)) &&
				(i+1 == len(want[s]) || want[s][i].Score-want[s][i+1].Score > 2*(maxBound+tol))
			if !apart {
				continue
			}
			clear++
			if i >= len(got[s]) || key(got[s][i]) != key(want[s][i]) {
				t.Fatalf("sentence %d: float32's hypothesis %d is apart from its neighbours by more than the bounds, yet bf16's differs:\nbf16 %v\nfloat32 %v", s, i, got[s], want[s])
			}
		}
	}
	t.Logf("%d of %d sentences the same, %d hypotheses clearly apart; %d hypotheses compared, errors up to %.3f of their bounds; bounds up to %.3g", same, len(want), clear, matched, worst, largest)
	if same < len(want)*9/10 || clear < len(want) || matched < len(want)*width/2 {
		t.Fatalf("only %d of %d sentences the same, %d clearly apart, %d hypotheses compared: the test compares too little", same, len(want), clear, matched)
	}
}
