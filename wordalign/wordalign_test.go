package wordalign

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/attend-nmt/attend/align"
	"github.com/attend-nmt/attend/data"
	"github.com/attend-nmt/attend/synth"
	"gonum.org/v1/gonum/mathext"
)

// Tension is the diagonal prior's λ the model aligns with.
func (m *Model) Tension() float64 { return m.tension }

// Translations returns the row of source id e of the lexical table: the target ids seen with e, ascending, and
// their t(f | e). The slices belong to the model.
func (m *Model) Translations(e int) (tgt []int32, prob []float64) {
	lo, hi := m.pairs.start[e], m.pairs.start[e+1]
	return m.pairs.tgt[lo:hi], m.prob[lo:hi]
}

// Model1Options returns IBM Model 1 with plain EM: every source position and the empty word equally likely, no
// prior on the lexical table.
func Model1Options(iterations int) Options {
	return Options{Iterations: iterations}
}

// probOf is t(f | e) in m, or −1 when the pair is not in the table.
func probOf(m *Model, e, f int) float64 {
	tgt, prob := m.Translations(e)
	k, ok := slices.BinarySearch(tgt, int32(f))
	if !ok {
		return -1
	}
	return prob[k]
}

// Source words a=0, b=1; target words x=0, y=1. Pair 1 is "a b" → "x y", pair 2 "a" → "y".
var tinyCorpus = []data.Example{{Src: []int{0, 1}, Tgt: []int{0, 1}}, {Src: []int{0}, Tgt: []int{1}}}

// One iteration of Model 1 by hand: every t is equal, so each target word's posterior is uniform over the empty
// word and its source words — 1/3 in pair 1, 1/2 in pair 2. The counts are (a,x) 1/3, (a,y) 1/3+1/2 = 5/6,
// (b,x) = (b,y) = 1/3, (∅,x) 1/3, (∅,y) 5/6, and each row is normalised.
func TestModel1OneIterationByHand(t *testing.T) {
	m, err := Train(context.Background(), tinyCorpus, 2, 2, Model1Options(1))
	if err != nil {
		t.Fatal(err)
	}
	const null = 2
	want := map[[2]int]float64{{0, 0}: 2.0 / 7, {0, 1}: 5.0 / 7, {1, 0}: 0.5, {1, 1}: 0.5, {null, 0}: 2.0 / 7, {null, 1}: 5.0 / 7}
	for ef, p := range want {
		if got := probOf(m, ef[0], ef[1]); math.Abs(got-p) > 1e-9 {
			t.Errorf("t(%d | %d) = %.12f, want %.12f", ef[1], ef[0], got, p)
		}
	}
	// The first iteration's likelihood is that of the uniform table: 1/2 per target word.
	if got := m.Stats[0].LogLikelihood; math.Abs(got-math.Log(0.5)) > 1e-12 {
		t.Errorf("first iteration's mean log-likelihood %g, want log 1/2", got)
	}
	if got, want := m.Stats[0].NullShare, (1.0/3+1.0/3+0.5)/3; math.Abs(got-want) > 1e-9 {
		t.Errorf("empty word's share %g, want %g", got, want)
	}
}

// One iteration of fast_align's model by hand, with the diagonal prior and variational Bayes. In pair 1
// (m = n = 2) the feature is 0 on the diagonal (x–a, y–b) and −1/2 off it (x–b, y–a), so a word's non-empty
// prior is q = (1−p0)/(1+e^{−λ/2}) on the diagonal and r = q·e^{−λ/2} off it; in pair 2 y–a is on the
// diagonal with prior 1−p0. With equal t the posteriors are the priors: counts (a,x) q, (a,y) r+1−p0, (b,x) r,
// (b,y) q, (∅,x) p0, (∅,y) 2·p0, and t(f | e) = exp(ψ(c(e,f)+α) − ψ(Σ_f' c(e,f')+α)).
func TestDiagonalVBOneIterationByHand(t *testing.T) {
	opts := DefaultOptions()
	opts.Iterations = 1
	m, err := Train(context.Background(), tinyCorpus, 2, 2, opts)
	if err != nil {
		t.Fatal(err)
	}
	p0, lambda, alpha := opts.NullProb, opts.Tension, opts.Alpha
	q := (1 - p0) / (1 + math.Exp(-lambda/2))
	r := q * math.Exp(-lambda/2)
	counts := [3][2]float64{{q, r + 1 - p0}, {r, q}, {p0, 2 * p0}}
	for e, row := range counts {
		psiTotal := mathext.Digamma(row[0] + alpha + row[1] + alpha)
		for f, c := range row {
			want := math.Exp(mathext.Digamma(c+alpha) - psiTotal)
			if got := probOf(m, e, f); math.Abs(got-want) > 1e-9 {
				t.Errorf("t(%d | %d) = %.12f, want %.12f", f, e, got, want)
			}
		}
	}
	if m.Tension() != lambda {
		t.Errorf("tension %g after one iteration, want the starting %g (fast_align optimises it from the second)", m.Tension(), lambda)
	}
	// Viterbi: the diagonal wins in both pairs.
	links, err := m.Align(context.Background(), tinyCorpus)
	if err != nil {
		t.Fatal(err)
	}
	want := [][]align.Link{{{Src: 0, Tgt: 0}, {Src: 1, Tgt: 1}}, {{Src: 0, Tgt: 0}}}
	if !slices.EqualFunc(links, want, slices.Equal) {
		t.Errorf("links %v, want %v", links, want)
	}
}

// reference is fast_align's training written as plainly as possible: dense tables, one sentence at a time,
// brute-force sums for Z and the prior's mean (fastAlignComputeZ for the normalizer fast_align divides by),
// float64 counts. It returns the table (row srcSize is the empty word; pairs never seen together are absent),
// the tension after each iteration, and the Viterbi decision of every target word with whether it is clear
// (the best beats the runner-up by more than rounding).
func reference(ex []data.Example, srcSize, tgtSize int, o Options) (prob []map[int]float64, tensions []float64, best [][]int, clear [][]bool) {
	prob = make([]map[int]float64, srcSize+1)
	for e := range prob {
		prob[e] = map[int]float64{}
	}
	for _, p := range ex {
		for _, f := range p.Tgt {
			for _, e := range append(slices.Clone(p.Src), srcSize) {
				prob[e][f] = 1
			}
		}
	}
	lambda := o.Tension
	targetWords := 0
	for _, p := range ex {
		targetWords += len(p.Tgt)
	}
	joint := func(p data.Example, i int, lambda float64) []float64 { // index 0: the empty word
		n, m := len(p.Src), len(p.Tgt)
		out := []float64{prob[srcSize][p.Tgt[i-1]] * o.NullProb}
		z := bruteZ(i, m, n, lambda) / (1 - o.NullProb)
		for j := 1; j <= n; j++ {
			out = append(out, prob[p.Src[j-1]][p.Tgt[i-1]]*math.Exp(lambda*feature(i, j, m, n))/z)
		}
		return out
	}
	for it := 1; it <= o.Iterations; it++ {
		counts := make([]map[int]float64, srcSize+1)
		for e := range counts {
			counts[e] = map[int]float64{}
		}
		empirical := 0.0
		for _, p := range ex {
			for i := 1; i <= len(p.Tgt); i++ {
				probs := joint(p, i, lambda)
				total := 0.0
				for _, x := range probs {
					total += x
				}
				f := p.Tgt[i-1]
				counts[srcSize][f] += probs[0] / total
				for j := 1; j < len(probs); j++ {
					counts[p.Src[j-1]][f] += probs[j] / total
					empirical += feature(i-1, j, len(p.Tgt), len(p.Src)) * probs[j] / total
				}
			}
		}
		if it > 1 {
			empirical /= float64(targetWords)
			for range 8 {
				model := 0.0
				for _, p := range ex {
					m, n := len(p.Tgt), len(p.Src)
					for i := 1; i <= m; i++ {
						model += bruteFeatureSum(i, m, n, lambda) / fastAlignComputeZ(i, n, m, lambda)
					}
				}
				model /= float64(targetWords)
				lambda = min(max(lambda+(empirical-model)*20, 0.1), 14)
			}
		}
		tensions = append(tensions, lambda)
		for e, row := range prob {
			total := 0.0
			for f := range row {
				total += counts[e][f] + o.Alpha
			}
			for f := range row {
				row[f] = math.Exp(mathext.Digamma(counts[e][f]+o.Alpha) - mathext.Digamma(total))
			}
		}
	}
	for _, p := range ex {
		var b []int
		var c []bool
		for i := 1; i <= len(p.Tgt); i++ {
			probs := joint(p, i, lambda)
			k := 0
			for j := range probs {
				if probs[j] > probs[k] {
					k = j
				}
			}
			clearWin := true
			for j := range probs {
				if j != k && math.Abs(probs[j]-probs[k]) <= 1e-6*probs[k] {
					clearWin = false
				}
			}
			b, c = append(b, k), append(c, clearWin)
		}
		best, clear = append(best, b), append(clear, c)
	}
	return prob, tensions, best, clear
}

// randomCorpus draws pairs whose target words are noisy, locally reordered translations of the source words,
// so that EM has something to find and the tension something to fit.
func randomCorpus(rng *rand.Rand, pairs, vocab int) []data.Example {
	var ex []data.Example
	for range pairs {
		var p data.Example
		for range 1 + rng.IntN(9) {
			p.Src = append(p.Src, rng.IntN(vocab))
		}
		for _, e := range p.Src {
			switch r := rng.Float64(); {
			case r < 0.1: // dropped
			case r < 0.2:
				p.Tgt = append(p.Tgt, rng.IntN(vocab)) // noise
			default:
				p.Tgt = append(p.Tgt, (e*7+3)%vocab)
			}
		}
		if len(p.Tgt) > 2 && rng.IntN(2) == 0 {
			k := rng.IntN(len(p.Tgt) - 1)
			p.Tgt[k], p.Tgt[k+1] = p.Tgt[k+1], p.Tgt[k]
		}
		if len(p.Tgt) == 0 {
			p.Tgt = []int{rng.IntN(vocab)}
		}
		ex = append(ex, p)
	}
	return ex
}

// Train and Align (fixed-point counts, closed-form sums, sparse table, several workers) agree with the plain
// reference on every probability, every tension and every clear Viterbi decision.
func TestTrainMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	const vocab = 12
	ex := randomCorpus(rng, 300, vocab)
	opts := DefaultOptions()
	opts.Workers = 3
	m, err := Train(context.Background(), ex, vocab, vocab, opts)
	if err != nil {
		t.Fatal(err)
	}
	prob, tensions, best, clear := reference(ex, vocab, vocab, opts)
	for k, st := range m.Stats {
		if math.Abs(st.Tension-tensions[k]) > 1e-8 {
			t.Errorf("iteration %d: tension %.12f, reference %.12f", k+1, st.Tension, tensions[k])
		}
	}
	if tensions[len(tensions)-1] == opts.Tension {
		t.Fatalf("the tension never moved from %g: the test does not exercise its update", opts.Tension)
	}
	for e, row := range prob {
		if tgt, _ := m.Translations(e); len(tgt) != len(row) {
			t.Errorf("row %d has %d pairs, reference %d", e, len(tgt), len(row))
		}
		for f, want := range row {
			// Fixed-point counts round each posterior to 2⁻³²: a count near 0 then moves t by about ψ'(α)·2⁻³²
			// relative, visible only on probabilities far too small to matter.
			if got := probOf(m, e, f); math.Abs(got-want) > 1e-7*want && math.Abs(got-want) > 1e-12 {
				t.Errorf("t(%d | %d) = %.12g, reference %.12g", f, e, got, want)
			}
		}
	}
	links, err := m.Align(context.Background(), ex)
	if err != nil {
		t.Fatal(err)
	}
	decided := 0
	for k, p := range ex {
		src := make([]int, len(p.Tgt)) // the source position +1 of each target word, 0 for none
		for _, l := range links[k] {
			src[l.Tgt] = l.Src + 1
		}
		for i := range p.Tgt {
			if !clear[k][i] {
				continue
			}
			decided++
			if src[i] != best[k][i] {
				t.Errorf("pair %d target %d: linked to source %d, reference %d (0: none)", k, i, src[i], best[k][i])
			}
		}
	}
	if total := len(slices.Concat(func() [][]int { return best }()...)); decided < total*9/10 {
		t.Errorf("only %d of %d decisions are clear", decided, total)
	}
}

// The model and its links are bit for bit the same for any number of workers.
func TestDeterministicAcrossWorkers(t *testing.T) {
	ex := randomCorpus(rand.New(rand.NewPCG(7, 8)), 3000, 40)
	var first *Model
	var firstLinks [][]align.Link
	for _, workers := range []int{1, 2, 3, 8} {
		opts := DefaultOptions()
		opts.Workers = workers
		m, err := Train(context.Background(), ex, 40, 40, opts)
		if err != nil {
			t.Fatal(err)
		}
		links, err := m.Align(context.Background(), ex)
		if err != nil {
			t.Fatal(err)
		}
		if first == nil {
			first, firstLinks = m, links
			continue
		}
		if !slices.Equal(m.prob, first.prob) || !slices.Equal(m.Stats, first.Stats) {
			t.Errorf("%d workers: the table or the statistics differ from 1 worker's", workers)
		}
		if !slices.EqualFunc(links, firstLinks, slices.Equal) {
			t.Errorf("%d workers: the links differ from 1 worker's", workers)
		}
	}
}

// synthPairs turns synthetic pairs into words and gold links.
func synthPairs(ps []synth.Pair) ([]data.Pair, [][]align.Link) {
	pairs := make([]data.Pair, len(ps))
	gold := make([][]align.Link, len(ps))
	for k, p := range ps {
		pairs[k] = data.Pair{Src: strings.Fields(p.Src), Tgt: strings.Fields(p.Tgt), Line: k + 1}
		for _, l := range p.Alignment {
			gold[k] = append(gold[k], align.Link{Src: l[0], Tgt: l[1]})
		}
	}
	return pairs, gold
}

// On the synthetic corpus (a known permutation: adjectives swap with their nouns, the verb moves to the end)
// the aligner finds nearly every link: AER at most 0.03 forward and symmetrized, 0.015 intersected (measured:
// 0.013 forward, 0.007 reverse, 0.013 grow-diag-final-and, 0.009 intersection).
func TestAlignWordsSynthetic(t *testing.T) {
	pairs, gold := synthPairs(synth.Generate(2000, rand.New(rand.NewPCG(1, 1))))
	links, err := AlignWords(context.Background(), pairs, DefaultOptions(), align.GrowDiagFinalAnd)
	if err != nil {
		t.Fatal(err)
	}
	for method, most := range map[align.Symmetrization]float64{align.Forward: 0.03, align.Reverse: 0.03,
		align.GrowDiagFinalAnd: 0.03, align.Intersection: 0.015} {
		var s align.Scores
		for k, l := range links.Symmetrized(method) {
			s.Add(l, gold[k])
		}
		t.Logf("%s: precision %.4f recall %.4f AER %.4f", method, s.Precision(), s.Recall(), s.AER())
		if s.AER() > most {
			t.Errorf("%s: AER %.4f, want at most %g", method, s.AER(), most)
		}
	}
}

func TestAlignDirections(t *testing.T) {
	// a, b, c translate as y, x, z: "a b" → "x y" is crossed.
	const a, b, c, x, y, z = 0, 1, 2, 0, 1, 2
	ex := []data.Example{{Src: []int{a, b}, Tgt: []int{x, y}}, {Src: []int{a, c}, Tgt: []int{y, z}}, {Src: []int{b, c}, Tgt: []int{x, z}}}
	opts := Model1Options(5)
	fwd, err := Align(context.Background(), ex, 3, 3, opts, align.Forward)
	if err != nil {
		t.Fatal(err)
	}
	if fwd.Reverse != nil {
		t.Error("forward alignment trained the reverse model too")
	}
	both, err := Align(context.Background(), ex, 3, 3, opts, align.Intersection)
	if err != nil {
		t.Fatal(err)
	}
	want := []align.Link{{Src: 0, Tgt: 1}, {Src: 1, Tgt: 0}}
	for name, got := range map[string][]align.Link{"forward": fwd.Forward[0], "reverse": both.Reverse[0],
		"intersection": both.Symmetrized(align.Intersection)[0]} {
		if !slices.Equal(got, want) {
			t.Errorf("%s links of pair 1: %v, want %v (source position first)", name, got, want)
		}
	}
}

func TestProgress(t *testing.T) {
	ex := randomCorpus(rand.New(rand.NewPCG(9, 9)), 1000, 20)
	var got []Progress
	opts := DefaultOptions()
	opts.Progress = func(p Progress) { got = append(got, p) }
	if _, err := Align(context.Background(), ex, 20, 20, opts, align.GrowDiagFinalAnd); err != nil {
		t.Fatal(err)
	}
	// Per direction: every EM iteration and the aligning pass end with Done = Total, the iterations with stats;
	// Pass names them.
	var ends []string
	for k, p := range got {
		if p.Total != len(ex) || p.Done > p.Total || k > 0 && got[k-1].Iteration == p.Iteration && got[k-1].Direction == p.Direction && got[k-1].Done >= p.Done {
			t.Fatalf("report %d: %+v after %+v", k, p, got[max(k-1, 0)])
		}
		if p.Done == p.Total {
			ends = append(ends, p.Pass())
			if (p.Stats != nil) != (p.Iteration > 0) {
				t.Errorf("report %+v: stats at the end of an EM iteration only", p)
			}
		}
	}
	want := []string{"forward EM 1/4", "forward EM 2/4", "forward EM 3/4", "forward EM 4/4", "forward aligning",
		"reverse EM 1/4", "reverse EM 2/4", "reverse EM 3/4", "reverse EM 4/4", "reverse aligning"}
	if !slices.Equal(ends, want) {
		t.Errorf("passes ended %v, want %v", ends, want)
	}
	if len(got) <= len(want) {
		t.Errorf("%d reports for %d passes of 4 chunks: no report within a pass", len(got), len(want))
	}
}

func TestTrainRejects(t *testing.T) {
	ok := []data.Example{{Src: []int{0}, Tgt: []int{0}}}
	bad := func(o Options) Options { return o }
	for _, c := range []struct {
		ex   []data.Example
		opts Options
		want string
	}{
		{[]data.Example{{Src: []int{0}, Tgt: []int{0}}, {Src: []int{2}, Tgt: []int{0}}}, DefaultOptions(), "sentence pair 2: source id 2 outside the vocabulary of 2"},
		{[]data.Example{{Src: []int{0}, Tgt: []int{-1}}}, DefaultOptions(), "sentence pair 1: target id -1 outside"},
		{ok, Model1Options(0), "0 iterations"},
		{ok, bad(Options{Iterations: 1, Diagonal: true, Tension: 0}), "tension 0"},
		{ok, bad(Options{Iterations: 1, Diagonal: true, Tension: 4, NullProb: 1}), "empty word probability 1"},
		{ok, bad(Options{Iterations: 1, Alpha: -1}), "Dirichlet concentration -1"},
		{ok, bad(Options{Iterations: 1, Alpha: math.NaN()}), "Dirichlet concentration NaN"},
		{ok, bad(Options{Iterations: 1, Workers: -2}), "-2 workers"},
		{ok, bad(Options{Iterations: 1, HMMIterations: -1}), "-1 HMM iterations"},
		{ok, bad(Options{Iterations: 1, HMMIterations: 1, HMMNullProb: 1, MaxJump: 10}), "HMM empty word probability 1"},
		{ok, bad(Options{Iterations: 1, HMMIterations: 1, HMMNullProb: 0.4}), "HMM maximum jump 0"},
	} {
		if _, err := Train(context.Background(), c.ex, 2, 2, c.opts); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Train(%v, %+v): error %v, want one containing %q", c.ex, c.opts, err, c.want)
		}
	}
}

// Pairs with an empty side: an empty target teaches nothing and gets no links, an empty source links nothing;
// with either model.
func TestEmptySides(t *testing.T) {
	ex := []data.Example{{Src: []int{0}, Tgt: []int{0}}, {Src: nil, Tgt: []int{1}}, {Src: []int{1}, Tgt: nil}, {}}
	for _, name := range []string{"fast_align", "hmm"} {
		opts, err := ModelOptions(name)
		if err != nil {
			t.Fatal(err)
		}
		links, err := Align(context.Background(), ex, 2, 2, opts, align.GrowDiagFinalAnd)
		if err != nil {
			t.Fatal(err)
		}
		got := links.Symmetrized(align.GrowDiagFinalAnd)
		if want := [][]align.Link{{{Src: 0, Tgt: 0}}, {}, {}, {}}; !slices.EqualFunc(got, want, slices.Equal) {
			t.Errorf("%s: links %v, want %v", name, got, want)
		}
	}
}

func TestCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	ex := randomCorpus(rand.New(rand.NewPCG(1, 2)), 100, 10)
	if _, err := Train(ctx, ex, 10, 10, DefaultOptions()); !errors.Is(err, context.Canceled) {
		t.Errorf("Train with a cancelled context: %v", err)
	}
}
