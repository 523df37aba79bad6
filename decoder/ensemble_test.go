package decoder

import (
	"fmt"
	"github.com/attend-nmt/attend/kernels"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/attend-nmt/attend/encoder"
	"github.com/attend-nmt/attend/internal/gradcheck"
	"github.com/attend-nmt/attend/param"
)

// ensembleConfigs are two decoders over the tests' vocabulary of queueVocab words that differ in everything
// else: widths, attention function, input feeding, layers and the order of attention and LSTM, and so in the
// width of the encoder output each reads.
var ensembleConfigs = []Config{
	{Vocab: queueVocab, Emb: 4, Hidden: 6, MemDim: queueMemDim, Attn: 6},
	{Vocab: queueVocab, Emb: 5, Hidden: 7, MemDim: 10, Attn: 4, Attention: "general", InputFeeding: true, Layers: 2, AttendAfterInput: true},
}

// configDecoder is a decoder of cfg drawn from seed.
func configDecoder(t *testing.T, cfg Config, seed uint64) *Decoder[float64] {
	t.Helper()
	set := param.NewSet[float64]()
	d, err := New(set, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	set.Pack()
	d.Init(rand.New(rand.NewPCG(seed, 1)))
	return d
}

// encodings returns, for each memory width of mds, a random encoder output of rows sentences padded to srcLen
// positions (padding random too): what each member's own encoder would make of the same batch.
func encodings(rng *rand.Rand, rows, srcLen int, mds []int) []*encoder.Output[float64] {
	var encs []*encoder.Output[float64]
	for _, md := range mds {
		encs = append(encs, &encoder.Output[float64]{Rows: rows, SrcLen: srcLen, Hidden: md / 2,
			Memory: gradcheck.Random(rng, rows*srcLen*md, 1),
			FinalH: gradcheck.Random(rng, rows*md, 1), FinalC: gradcheck.Random(rng, rows*md, 1)})
	}
	return encs
}

// rowOf is row r of enc alone, its first n positions.
func rowOf(enc *encoder.Output[float64], r, n int) *encoder.Output[float64] {
	s, md := enc.SrcLen, 2*enc.Hidden
	return &encoder.Output[float64]{Rows: 1, SrcLen: n, Hidden: enc.Hidden,
		Memory: slices.Clone(enc.Memory[r*s*md : (r*s+n)*md]),
		FinalH: slices.Clone(enc.FinalH[r*md : (r+1)*md]), FinalC: slices.Clone(enc.FinalC[r*md : (r+1)*md])}
}

// refSentence is the plain reference of an ensemble on one sentence: each member is stepped alone over the
// sentence's own encoder output (unpadded), from scratch for every prefix.
type refSentence struct {
	ds   []*Decoder[float64]
	encs []*encoder.Output[float64] // one row each
	n    int                        // source words
}

// next returns, after the target words prefix, the mean over the members of each word's log-probability
// (logit minus the log of the sum of the exps, computed plainly) and the first member's attention weights.
func (r refSentence) next(prefix []int) (mean, attn []float64) {
	mean = make([]float64, queueVocab)
	for m, d := range r.ds {
		mem, st := d.Start(r.encs[m], []int{r.n})
		buf := d.NewScratch(1, r.n)
		logits, weights := make([]float64, queueVocab), make([]float64, r.n)
		prev := queueBOS
		for t := 0; t <= len(prefix); t++ {
			d.Step(st, []int{prev}, mem, buf, logits, weights)
			if t < len(prefix) {
				prev = prefix[t]
			}
		}
		top := slices.Max(logits)
		sum := 0.0
		for _, x := range logits {
			sum += math.Exp(x - top)
		}
		for i, x := range logits {
			mean[i] += (x - top - math.Log(sum)) / float64(len(r.ds))
		}
		if m == 0 {
			attn = weights
		}
	}
	return mean, attn
}

// greedy is the reference greedy search: the word of the largest mean log-probability at every step (the
// first of equals), its words, the first member's attention rows, whether it ended with </s>, and its
// log-probability (the sum of the chosen words' means, </s> included).
func (r refSentence) greedy(maxLen int) (h Hypothesis, logProb float64) {
	var prefix []int
	for len(h.Attention) < maxLen {
		mean, attn := r.next(prefix)
		best := 0
		for i, x := range mean {
			if x > mean[best] {
				best = i
			}
		}
		h.Attention = append(h.Attention, toFloat32(attn))
		logProb += mean[best]
		if best == queueEOS {
			h.Finished = true
			break
		}
		prefix = append(prefix, best)
	}
	h.Tokens = prefix
	return h, logProb
}

// TestEnsembleOfOneIsTheModel: an ensemble of one decoder, which ranks by log-probabilities where the decoder
// ranks by logits, gives exactly the decoder's output: greedily (in a refilled batch, one goroutine and two)
// the same words, attention and endings; with a beam of 3, n-best, a length ratio and both penalties, the same
// hypotheses with the same LogProb and Score to the last bit. In float64 and in float32.
func TestEnsembleOfOneIsTheModel(t *testing.T) {
	for _, cfg := range ensembleConfigs {
		name := cfg.Attention
		if name == "" {
			name = "additive"
		}
		t.Run(fmt.Sprintf("%s+%d-layers/float64", name, max(cfg.Layers, 1)), func(t *testing.T) {
			d := configDecoder(t, cfg, 11)
			enc := encodings(rand.New(rand.NewPCG(1, 2)), 7, 6, []int{cfg.MemDim})[0]
			checkEnsembleOfOne(t, d, enc)
		})
	}
	t.Run("float32", func(t *testing.T) {
		set := param.NewSet[float32]()
		d, err := New(set, ensembleConfigs[0], nil)
		if err != nil {
			t.Fatal(err)
		}
		set.Pack()
		d.Init(rand.New(rand.NewPCG(11, 1)))
		e64 := encodings(rand.New(rand.NewPCG(1, 2)), 7, 6, []int{queueMemDim})[0]
		enc := &encoder.Output[float32]{Rows: e64.Rows, SrcLen: e64.SrcLen, Hidden: e64.Hidden,
			Memory: toFloat32(e64.Memory), FinalH: toFloat32(e64.FinalH), FinalC: toFloat32(e64.FinalC)}
		checkEnsembleOfOne(t, d, enc)
	})
}

func checkEnsembleOfOne[T interface{ ~float32 | ~float64 }](t *testing.T, d *Decoder[T], enc *encoder.Output[T]) {
	t.Helper()
	lengths := []int{6, 1, 4, 2, 5, 3, 6}
	e := newEnsemble(d)
	for _, threads := range []int{1, 2} {
		queue := func(search func(rows, threads int, products kernels.Products, next func() *encBlock[T], bos, eos, maxLen int, done func(int, Hypothesis))) []Hypothesis {
			got := make([]Hypothesis, enc.Rows)
			block := &encBlock[T]{Enc: enc, Lengths: lengths, IDs: []int{0, 1, 2, 3, 4, 5, 6}}
			search(3, threads, kernels.Products{}, func() *encBlock[T] {
				b := block
				block = nil
				return b
			}, queueBOS, queueEOS, 9, func(id int, h Hypothesis) { got[id] = h })
			return got
		}
		want, got := queue(d.queue), queue(e.queue)
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("greedy, %d threads: the ensemble of one gave\n%v\nthe decoder\n%v", threads, got, want)
		}
	}
	opts := BeamOptions{Width: 3, NBest: 3, MaxLen: 9, MaxLenRatio: 1.5, Alpha: 0.6, Beta: 0.2}
	want, err := d.Beam(enc, lengths, queueBOS, queueEOS, opts)
	if err != nil {
		t.Fatal(err)
	}
	got, err := e.Beam([]*encoder.Output[T]{enc}, lengths, queueBOS, queueEOS, opts)
	if err != nil {
		t.Fatal(err)
	}
	for s := range want {
		for i := range want[s] {
			w, g := want[s][i], got[s][i]
			if fmt.Sprint(g.Hypothesis) != fmt.Sprint(w.Hypothesis) || g.LogProb != w.LogProb || g.Score != w.Score {
				t.Fatalf("beam, sentence %d, hypothesis %d: the ensemble of one gave %v (log p %v, score %v), the decoder %v (log p %v, score %v)",
					s, i, g.Tokens, g.LogProb, g.Score, w.Tokens, w.LogProb, w.Score)
			}
		}
		if len(got[s]) != len(want[s]) {
			t.Fatalf("beam, sentence %d: %d hypotheses from the ensemble of one, %d from the decoder", s, len(got[s]), len(want[s]))
		}
	}
}

// TestEnsembleGreedyAveragesLogProbs decodes 11 sentences greedily with an ensemble of two decoders of different
// architectures, in a batch of 3 rows refilled from three blocks, with one goroutine and two, and requires for
// each sentence the words, endings and attention (the first member's) of the reference, which steps each
// member alone and takes the word of the largest mean log-probability; a beam of 1 must give the same words
// with the reference's log-probability. The ensemble must also choose differently from each member alone, or
// the test would not tell the mean from either.
func TestEnsembleGreedyAveragesLogProbs(t *testing.T) {
	const maxLen = 10
	ds := []*Decoder[float64]{configDecoder(t, ensembleConfigs[0], 5), configDecoder(t, ensembleConfigs[1], 6)}
	e := newEnsemble(ds...)
	rng := rand.New(rand.NewPCG(7, 8))
	var blocks []*encBlock[float64]
	var refs []refSentence
	for _, lengths := range [][]int{{3, 1, 4}, {9, 2, 6, 5}, {5, 3, 5, 8}} {
		encs := encodings(rng, len(lengths), slices.Max(lengths)+1, []int{ensembleConfigs[0].MemDim, ensembleConfigs[1].MemDim})
		b := &encBlock[float64]{Enc: encs[0], Others: encs[1:], Lengths: lengths}
		for r, n := range lengths {
			b.IDs = append(b.IDs, len(refs))
			refs = append(refs, refSentence{ds: ds, encs: []*encoder.Output[float64]{rowOf(encs[0], r, n), rowOf(encs[1], r, n)}, n: n})
		}
		blocks = append(blocks, b)
	}
	wants := make([]Hypothesis, len(refs))
	logProbs := make([]float64, len(refs))
	for i, r := range refs {
		wants[i], logProbs[i] = r.greedy(maxLen)
	}
	for _, threads := range []int{1, 2} {
		got := map[int]Hypothesis{}
		e.queue(3, threads, kernels.Products{}, queueOf(blocks), queueBOS, queueEOS, maxLen, func(id int, h Hypothesis) { got[id] = h })
		for id, want := range wants {
			h := got[id]
			if !slices.Equal(h.Tokens, want.Tokens) || h.Finished != want.Finished {
				t.Fatalf("%d threads, sentence %d: the ensemble gave %v (finished %v), the reference %v (finished %v)", threads, id, h.Tokens, h.Finished, want.Tokens, want.Finished)
			}
			if !closeRows(h.Attention, want.Attention, 1e-6) {
				t.Fatalf("%d threads, sentence %d: attention\n%v\nthe reference's (the first member's)\n%v", threads, id, h.Attention, want.Attention)
			}
		}
	}
	differs := make([]bool, len(ds))
	for id, r := range refs {
		hyps, err := e.Beam(r.encs, []int{r.n}, queueBOS, queueEOS, BeamOptions{Width: 1, MaxLen: maxLen})
		if err != nil {
			t.Fatal(err)
		}
		if h := hyps[0][0]; !slices.Equal(h.Tokens, wants[id].Tokens) || math.Abs(h.LogProb-logProbs[id]) > 1e-9 {
			t.Fatalf("sentence %d: a beam of 1 gave %v with log p %v; the reference %v with %v", id, h.Tokens, h.LogProb, wants[id].Tokens, logProbs[id])
		}
		for m, d := range ds {
			alone := d.Greedy(r.encs[m], []int{r.n}, queueBOS, queueEOS, maxLen)[0]
			differs[m] = differs[m] || !slices.Equal(alone.Tokens, wants[id].Tokens)
		}
	}
	if !differs[0] || !differs[1] {
		t.Fatalf("the ensemble translates every sentence as a member alone (differs from each: %v); the test cannot tell the mean from it", differs)
	}
}

// TestEnsembleBeamBatchMatchesAlone: beam search with an ensemble of two different decoders over a batch of 6
// sentences, whose length limits (a ratio of their source lengths) make them leave the batch at different
// steps, so that the live sentences' rows and memory move forward in every member, gives each sentence the
// n-best list it gets alone: the same words, endings, log-probabilities, scores and attention.
func TestEnsembleBeamBatchMatchesAlone(t *testing.T) {
	ds := []*Decoder[float64]{configDecoder(t, ensembleConfigs[0], 31), configDecoder(t, ensembleConfigs[1], 32)}
	e := newEnsemble(ds...)
	lengths := []int{2, 6, 1, 4, 3, 5}
	encs := encodings(rand.New(rand.NewPCG(4, 4)), len(lengths), 7, []int{ensembleConfigs[0].MemDim, ensembleConfigs[1].MemDim})
	opts := BeamOptions{Width: 3, NBest: 3, MaxLen: 12, MaxLenRatio: 1.5, Alpha: 0.6, Beta: 0.2}
	batch, err := e.Beam(encs, lengths, queueBOS, queueEOS, opts)
	if err != nil {
		t.Fatal(err)
	}
	for s, n := range lengths {
		alone, err := e.Beam([]*encoder.Output[float64]{rowOf(encs[0], s, n), rowOf(encs[1], s, n)}, []int{n}, queueBOS, queueEOS, opts)
		if err != nil {
			t.Fatal(err)
		}
		if len(batch[s]) != len(alone[0]) {
			t.Fatalf("sentence %d: %d hypotheses in the batch, %d alone", s, len(batch[s]), len(alone[0]))
		}
		for i, want := range alone[0] {
			got := batch[s][i]
			if fmt.Sprint(got.Tokens, got.Finished) != fmt.Sprint(want.Tokens, want.Finished) || math.Abs(got.LogProb-want.LogProb) > 1e-9 ||
				math.Abs(got.Score-want.Score) > 1e-9 || !closeRows(got.Attention, want.Attention, 1e-6) {
				t.Fatalf("sentence %d, hypothesis %d: in the batch %v (finished %v, log p %v, score %v), alone %v (%v, %v, %v)",
					s, i, got.Tokens, got.Finished, got.LogProb, got.Score, want.Tokens, want.Finished, want.LogProb, want.Score)
			}
		}
	}
}

// closeRows reports whether two attention matrices have the same shape and weights within tol.
func closeRows(a, b [][]float32, tol float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if len(a[i]) != len(b[i]) {
			return false
		}
		for j := range a[i] {
			if math.Abs(float64(a[i][j])-float64(b[i][j])) > tol {
				return false
			}
		}
	}
	return true
}

// TestEnsembleBeamIsExhaustiveWhenWide: with a beam as wide as the number of hypotheses of at most 3 words over
// the vocabulary of 6 (150 at the last step), nothing is pruned, so the n-best list of an ensemble of two
// different decoders must be every hypothesis — 31 ending with </s> after 0 to 2 words, 125 of 3 words cut by
// the length limit — each with the LogProb and Score that brute force gives it: the sum of the mean over the
// members of their log-probabilities of its words (and of </s>), each member stepped alone, divided by the
// length penalty (alpha 0.6), plus the coverage penalty (beta 0.3) of the first member's attention; and sorted
// by Score.
func TestEnsembleBeamIsExhaustiveWhenWide(t *testing.T) {
	const maxLen, width, alpha, beta = 3, 156, 0.6, 0.3
	ds := []*Decoder[float64]{configDecoder(t, ensembleConfigs[0], 21), configDecoder(t, ensembleConfigs[1], 22)}
	e := newEnsemble(ds...)
	encs := encodings(rand.New(rand.NewPCG(3, 3)), 2, 5, []int{ensembleConfigs[0].MemDim, ensembleConfigs[1].MemDim})
	lengths := []int{5, 3}
	lists, err := e.Beam(encs, lengths, queueBOS, queueEOS, BeamOptions{Width: width, NBest: width, MaxLen: maxLen, Alpha: alpha, Beta: beta})
	if err != nil {
		t.Fatal(err)
	}
	for s, list := range lists {
		ref := refSentence{ds: ds, encs: []*encoder.Output[float64]{rowOf(encs[0], s, lengths[s]), rowOf(encs[1], s, lengths[s])}, n: lengths[s]}
		// Brute force: every sequence of up to maxLen words, scored word by word.
		want := map[string]Scored{}
		var grow func(prefix []int, logProb float64, attn [][]float32)
		grow = func(prefix []int, logProb float64, attn [][]float32) {
			mean, a := ref.next(prefix)
			for w := range queueVocab {
				h := Hypothesis{Tokens: slices.Clone(prefix), Attention: append(slices.Clone(attn), toFloat32(a)), Finished: w == queueEOS}
				lp := logProb + mean[w]
				switch {
				case w == queueEOS:
					want[key(h)] = Scored{Hypothesis: h, LogProb: lp, Score: lp/LengthPenalty(len(prefix)+1, alpha) + CoveragePenalty(h.Attention, beta)}
				case len(prefix)+1 == maxLen:
					h.Tokens = append(h.Tokens, w)
					want[key(h)] = Scored{Hypothesis: h, LogProb: lp, Score: lp/LengthPenalty(maxLen, alpha) + CoveragePenalty(h.Attention, beta)}
				default:
					grow(append(slices.Clone(prefix), w), lp, h.Attention)
				}
			}
		}
		grow(nil, 0, nil)
		if len(want) != width || len(list) != width {
			t.Fatalf("sentence %d: %d hypotheses from the beam, %d by brute force; want %d", s, len(list), len(want), width)
		}
		for i, got := range list {
			w, ok := want[key(got.Hypothesis)]
			if !ok {
				t.Fatalf("sentence %d: the beam gave %v (finished %v) twice or out of nowhere", s, got.Tokens, got.Finished)
			}
			delete(want, key(got.Hypothesis))
			if math.Abs(got.LogProb-w.LogProb) > 1e-9 || math.Abs(got.Score-w.Score) > 1e-9 || !closeRows(got.Attention, w.Attention, 1e-6) {
				t.Fatalf("sentence %d, %v (finished %v): log p %v, score %v; brute force %v, %v (or the attention differs)", s, got.Tokens, got.Finished, got.LogProb, got.Score, w.LogProb, w.Score)
			}
			if i > 0 && got.Score > list[i-1].Score {
				t.Fatalf("sentence %d: hypothesis %d scores %v, above the one before it (%v)", s, i, got.Score, list[i-1].Score)
			}
		}
	}
}

// key names a hypothesis by its words and ending.
func key(h Hypothesis) string {
	return fmt.Sprint(h.Tokens, h.Finished)
}

// TestGreedyQueueRefusesDifferentVocabularies: members over target vocabularies of different sizes cannot be
// averaged; the panic names both sizes.
func TestGreedyQueueRefusesDifferentVocabularies(t *testing.T) {
	cfg := ensembleConfigs[0]
	cfg.Vocab = queueVocab + 1
	e := newEnsemble(configDecoder(t, ensembleConfigs[0], 1), configDecoder(t, cfg, 2))
	encs := encodings(rand.New(rand.NewPCG(1, 1)), 1, 2, []int{queueMemDim, queueMemDim})
	block := &encBlock[float64]{Enc: encs[0], Others: encs[1:], Lengths: []int{2}, IDs: []int{0}}
	defer func() {
		if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), fmt.Sprintf("over %d words got member 2 of a target vocabulary of %d words", queueVocab, queueVocab+1)) {
			t.Fatalf("got panic %v; want one naming both vocabulary sizes", r)
		}
	}()
	e.queue(1, 1, kernels.Products{}, func() *encBlock[float64] {
		b := block
		block = nil
		return b
	}, queueBOS, queueEOS, 4, func(int, Hypothesis) {})
}

// TestEnsembleAveragesByMean checks MeanLogProbs on numbers worked out by hand: two members' logits of a row
// of 2 words, log-softmaxed, averaged.
func TestEnsembleAveragesByMean(t *testing.T) {
	mean := make([]float64, 2)
	MeanLogProbs(mean, [][]float64{{0, 0}, {math.Log(3), 0}}, make([]float64, 2))
	// member 1: log ½, log ½; member 2: log ¾, log ¼.
	want := []float64{(math.Log(0.5) + math.Log(0.75)) / 2, (math.Log(0.5) + math.Log(0.25)) / 2}
	for i := range want {
		if math.Abs(mean[i]-want[i]) > 1e-15 {
			t.Fatalf("mean log-probabilities %v, want %v", mean, want)
		}
	}
}
