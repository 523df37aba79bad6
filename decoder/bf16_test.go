package decoder

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/attend-nmt/attend/encoder"
	"github.com/attend-nmt/attend/kernels"
	"github.com/attend-nmt/attend/param"
)

// TestBF16GreedyPicksTheExactBest scores 400 random inputs through a greedy search's bf16 output layer
// (bf16Search rescoring each row's best word) of 37 inputs and 500 words in which word 301 is word 120 nudged by
// 1e-6 per weight and both get a large bias, so that bf16 cannot tell them apart and they are the best two for
// most inputs. Every logit must be within its row's bound of the float64 one, summed here independently, and the
// bound not ten times looser than the errors; every choice must be the word of the largest float64 logit (up to
// float32 rounding, which the rescored logits are rounded to); both of the near-tied words must win for some
// inputs, each such input must have been rescored, and most other inputs must need no rescoring beyond the best
// word. It runs on kernels.AMXWeights: on AMX, on AVX512-BF16, or in plain Go, whichever runs here.
func TestBF16GreedyPicksTheExactBest(t *testing.T) {
	const k, vocab, rows, a, b = 37, 500, 400, 120, 301
	rng := rand.New(rand.NewPCG(8, 9))
	w := make([]float32, k*vocab)
	for i := range w {
		w[i] = float32(rng.NormFloat64() * 0.3)
	}
	bias := make([]float32, vocab)
	for v := range bias {
		bias[v] = float32(rng.NormFloat64() * 0.5)
	}
	for i := 0; i < k; i++ {
		w[i*vocab+b] = w[i*vocab+a] + float32(rng.NormFloat64()*1e-6)
	}
	bias[a], bias[b] = 6, 6
	f := newBF16Search(newBF16Output(w, bias, k, vocab), rows, 1, 1)
	x := make([]float32, rows*k)
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	f.round(x, 0, rows)
	f.multiply(rows, 0, 1)
	f.rescoreRows(x, 0, rows, 0)

	wins := map[int]int{}
	var alone int     // inputs whose best word needed no other rescored
	var worst float64 // the largest error of a bf16 logit as a share of its bound
	ld := f.o.amx.Stride()
	for r := 0; r < rows; r++ {
		xr, row := x[r*k:(r+1)*k], f.c[r*ld:r*ld+vocab]
		want, wantScore := -1, math.Inf(-1)
		exact := make([]float64, vocab)
		for v := range exact {
			s := float64(bias[v])
			for i := k - 1; i >= 0; i-- { // another order than bf16Output.score's
				s += float64(xr[i]) * float64(w[i*vocab+v])
			}
			if exact[v] = s; s > wantScore {
				want, wantScore = v, s
			}
			bound := f.delta[r] + f.rounding[r]
			if e := math.Abs(float64(row[v]) - s); e > bound {
				t.Fatalf("input %d, word %d: logit %.9g is %.3g from the true %.9g, beyond the bound %.3g", r, v, row[v], e, s, bound)
			} else if !slices.Contains(f.rescored[r], v) {
				worst = max(worst, e/f.delta[r])
			}
		}
		got := kernels.Argmax(row)
		if float32(exact[got]) != float32(wantScore) {
			t.Fatalf("input %d: chose word %d, the float64 best is %d (logits %.9g and %.9g)", r, got, want, exact[got], wantScore)
		}
		rescored := len(f.rescored[r])
		if want == a || want == b {
			wins[want]++
			if rescored < 2 {
				t.Fatalf("input %d: near-tied words %d and %d, but only %d rescored", r, a, b, rescored)
			}
		} else if rescored == 1 {
			alone++
		}
	}
	// The bound holds, and it is not so loose that a tenth of it would hold too (the true errors come within
	// a fraction of it: they add up at random, the bound as if all had one sign).
	if worst < 0.1 {
		t.Fatalf("the errors reach only %.3f of the bound", worst)
	}
	t.Logf("the largest error is %.3f of the bound", worst)
	if wins[a] == 0 || wins[b] == 0 {
		t.Fatalf("wins of the near-tied words: %v; want both to win sometimes", wins)
	}
	if others := rows - wins[a] - wins[b]; alone < others/2 {
		t.Fatalf("only %d of %d inputs with a clear best were decided without rescoring: the bound is too loose", alone, others)
	}
}

// float32Blocks converts blocks of randomBlocks to float32.
func float32Blocks(blocks []*encBlock[float64]) []*encBlock[float32] {
	conv := func(xs []float64) []float32 {
		out := make([]float32, len(xs))
		for i, x := range xs {
			out[i] = float32(x)
		}
		return out
	}
	var out []*encBlock[float32]
	for _, b := range blocks {
		e := b.Enc
		out = append(out, &encBlock[float32]{Enc: &encoder.Output[float32]{Rows: e.Rows, SrcLen: e.SrcLen, Hidden: e.Hidden,
			Memory: conv(e.Memory), FinalH: conv(e.FinalH), FinalC: conv(e.FinalC)}, Lengths: b.Lengths, IDs: b.IDs})
	}
	return out
}

// TestGreedyInBF16MatchesFloat32 decodes 60 sentences with a random decoder over 700 words (23 strips of 32 words,
// the last partial), on one goroutine and two, with batches of 7 rows (a partial tile of the kernel), with float32
// products and with bf16 products and rescoring: the words and the attention must be the same. It does so for
// both orders of attention and LSTM, on kernels.AMXWeights (AMX, AVX512-BF16 or plain Go, whichever runs here).
func TestGreedyInBF16MatchesFloat32(t *testing.T) {
	for _, after := range []bool{false, true} {
		t.Run(fmt.Sprintf("attend_after_input=%v", after), func(t *testing.T) { testGreedyInBF16MatchesFloat32(t, after) })
	}
}

func testGreedyInBF16MatchesFloat32(t *testing.T, after bool) {
	const vocab = 700
	set := param.NewSet[float32]()
	d, err := New(set, Config{Vocab: vocab, Emb: 12, Hidden: 20, MemDim: queueMemDim, Attn: 10, AttendAfterInput: after}, nil)
	if err != nil {
		t.Fatal(err)
	}
	set.Pack()
	d.Init(rand.New(rand.NewPCG(4, 1)))
	for i := range d.OutW.Data { // logits spread over several units, as a trained model's are
		d.OutW.Data[i] *= 8
	}
	rng := rand.New(rand.NewPCG(6, 7))
	blocks := float32Blocks(randomBlocks(rng, randomLengths(rng, 6, 10, 9)))
	decode := func(threads int) map[int]string {
		got := map[int]string{}
		i := 0
		next := func() *encBlock[float32] {
			if i == len(blocks) {
				return nil
			}
			i++
			return blocks[i-1]
		}
		d.single().queueWith(7, threads, next, GreedyOptions{BOS: queueBOS, EOS: queueEOS, MaxLen: 15}, func(id int, h Hypothesis) {
			got[id] = fmt.Sprint(h.Tokens, h.Finished, h.Attention)
		}, func(*Decoder[float32]) *bf16Output { return d.bf16 })
		return got
	}
	for _, threads := range []int{1, 2} {
		d.bf16 = nil
		want := decode(threads)
		d.useBF16()
		if d.bf16 == nil {
			t.Fatal("no bf16 output layer for a float32 decoder")
		}
		got := decode(threads)
		words := map[string]bool{}
		for id, w := range want {
			if got[id] != w {
				t.Fatalf("threads %d, sentence %d: bf16\n%s\nfloat32\n%s", threads, id, got[id], w)
			}
			words[w[:min(len(w), 12)]] = true
		}
		if len(want) != 60 || len(words) < 20 {
			t.Fatalf("%d sentences, %d distinct beginnings: the test decodes too little to compare", len(want), len(words))
		}
	}
	if _, err := kernels.Choose(kernels.PrecisionBF16); err != nil {
		t.Log("no bfloat16 products here: checked AMXWeights's plain-Go product")
	}
}
