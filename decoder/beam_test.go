package decoder

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/attend-nmt/attend/encoder"
	"github.com/attend-nmt/attend/param"
)

// Token ids of the bigram decoder below.
const (
	tokBOS, tokEOS, tokA, tokB, tokC = 2, 3, 4, 5, 6
	bigramVocab                      = 7
)

// bigramDecoder builds a decoder whose next-word distribution depends on the previous word only: the embedding
// is one-hot, every weight but the output layer's embedding rows is zero, and those rows hold log p(next |
// prev), so the logits are exactly the log-probabilities of the table. Words missing from a row get e^-40.
func bigramDecoder(t *testing.T, table map[int]map[int]float64) *Decoder[float64] {
	t.Helper()
	set := param.NewSet[float64]()
	cfg := Config{Vocab: bigramVocab, Emb: bigramVocab, Hidden: 3, MemDim: 2, Attn: 2}
	d, err := New(set, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	set.Pack()
	for i := 0; i < bigramVocab; i++ {
		d.Emb.Data[i*bigramVocab+i] = 1
	}
	embRows := cfg.Hidden + cfg.MemDim // the output layer reads [s_t; context; emb]
	for prev := 0; prev < bigramVocab; prev++ {
		row := d.OutW.Data[(embRows+prev)*bigramVocab : (embRows+prev+1)*bigramVocab]
		for next := range row {
			row[next] = -40
		}
		total := 0.0
		for next, p := range table[prev] {
			row[next] = math.Log(p)
			total += p
		}
		if len(table[prev]) > 0 && math.Abs(total-1) > 1e-12 {
			t.Fatalf("row %d of the table sums to %v", prev, total)
		}
	}
	return d
}

// zeroEncoding is an encoder output of rows sentences of srcLen words, all zero.
func zeroEncoding(rows, srcLen int) *encoder.Output[float64] {
	return &encoder.Output[float64]{Rows: rows, SrcLen: srcLen, Hidden: 1, Memory: make([]float64, rows*srcLen*2),
		FinalH: make([]float64, rows*2), FinalC: make([]float64, rows*2)}
}

// TestBeamFindsABetterHypothesisThanGreedy: greedy takes a (0.5), then b (0.36), then </s>: p = 0.18; the
// hypothesis "b" (0.4, then </s> with p ≈ 1) is better, and a beam of 2 finds it.
func TestBeamFindsABetterHypothesisThanGreedy(t *testing.T) {
	d := bigramDecoder(t, map[int]map[int]float64{
		tokBOS: {tokA: 0.5, tokB: 0.4, tokC: 0.1},
		tokA:   {tokB: 0.36, tokC: 0.34, tokEOS: 0.3},
		tokB:   {tokEOS: 1},
		tokC:   {tokEOS: 1},
	})
	greedy := d.Greedy(zeroEncoding(1, 2), []int{2}, tokBOS, tokEOS, 10)[0]
	if len(greedy.Tokens) != 2 || greedy.Tokens[0] != tokA || greedy.Tokens[1] != tokB || !greedy.Finished {
		t.Fatalf("greedy gave %v (finished %v), want [a b] finished", greedy.Tokens, greedy.Finished)
	}
	for _, width := range []int{1, 2, 3} {
		hyps, err := d.Beam(zeroEncoding(1, 2), []int{2}, tokBOS, tokEOS, BeamOptions{Width: width, NBest: width, MaxLen: 10})
		if err != nil {
			t.Fatal(err)
		}
		best := hyps[0][0]
		wantTokens, wantLogProb := []int{tokA, tokB}, math.Log(0.5*0.36*1)
		if width > 1 {
			wantTokens, wantLogProb = []int{tokB}, math.Log(0.4*1)
		}
		if !slices.Equal(best.Tokens, wantTokens) || !best.Finished || math.Abs(best.LogProb-wantLogProb) > 1e-9 || best.Score != best.LogProb {
			t.Fatalf("beam %d: best %v (finished %v, log p %v, score %v), want %v with log p %v", width, best.Tokens,
				best.Finished, best.LogProb, best.Score, wantTokens, wantLogProb)
		}
		if len(best.Attention) != len(best.Tokens)+1 {
			t.Fatalf("beam %d: %d attention rows for %d words and </s>", width, len(best.Attention), len(best.Tokens))
		}
	}
}

// TestLengthPenaltyCanPreferTheLongerHypothesis: with α = 0 a beam of 3 prefers "b" (0.4) to "a b" (0.18);
// dividing by lp = ((5+|Y|)/6)^α with |Y| counting </s> turns this round for a large α:
// log 0.4 / (7/6)^α < log 0.18 / (8/6)^α when α = 8.
func TestLengthPenaltyCanPreferTheLongerHypothesis(t *testing.T) {
	d := bigramDecoder(t, map[int]map[int]float64{
		tokBOS: {tokA: 0.5, tokB: 0.4, tokC: 0.1},
		tokA:   {tokB: 0.36, tokC: 0.34, tokEOS: 0.3},
		tokB:   {tokEOS: 1},
		tokC:   {tokEOS: 1},
	})
	const alpha = 8
	hyps, err := d.Beam(zeroEncoding(1, 2), []int{2}, tokBOS, tokEOS, BeamOptions{Width: 3, NBest: 3, MaxLen: 10, Alpha: alpha})
	if err != nil {
		t.Fatal(err)
	}
	best := hyps[0][0]
	want := math.Log(0.5*0.36) / math.Pow(8.0/6, alpha)
	if !slices.Equal(best.Tokens, []int{tokA, tokB}) || math.Abs(best.Score-want) > 1e-9 {
		t.Fatalf("best %v with score %v, want [a b] with %v", best.Tokens, best.Score, want)
	}
}

func TestPenaltiesHandComputed(t *testing.T) {
	tests := []struct {
		name      string
		got, want float64
	}{
		{"no length penalty at α 0", LengthPenalty(7, 0), 1},
		{"length 1 at α 1 is 1", LengthPenalty(1, 1), 1},
		{"length 3 at α 1", LengthPenalty(3, 1), 8.0 / 6},
		{"length 4 at α 0.6", LengthPenalty(4, 0.6), math.Pow(1.5, 0.6)},
		{"full coverage costs nothing", CoveragePenalty([][]float32{{0.5, 0.5}, {0.5, 0.5}}, 0.2), 0},
		// column sums 1.25 (capped at 1) and 0.75
		{"an under-attended word costs β log(total)", CoveragePenalty([][]float32{{0.5, 0.5}, {0.75, 0.25}}, 0.2), 0.2 * math.Log(0.75)},
		{"no coverage penalty at β 0", CoveragePenalty([][]float32{{1, 0}}, 0), 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if math.Abs(tt.got-tt.want) > 1e-12 {
				t.Fatalf("got %v, want %v", tt.got, tt.want)
			}
		})
	}
}

func TestBeamLengthLimits(t *testing.T) {
	// a and b loop forever: every hypothesis runs into the limit unfinished.
	d := bigramDecoder(t, map[int]map[int]float64{
		tokBOS: {tokA: 0.6, tokB: 0.4},
		tokA:   {tokB: 0.9, tokEOS: 0.1},
		tokB:   {tokA: 0.9, tokEOS: 0.1},
	})
	tests := []struct {
		name     string
		opts     BeamOptions
		srcLens  []int
		wantLens []int
	}{
		{"absolute", BeamOptions{Width: 2, MaxLen: 4}, []int{3, 5}, []int{4, 4}},
		{"ratio of the source length", BeamOptions{Width: 2, MaxLen: 6, MaxLenRatio: 1.5}, []int{2, 3, 5}, []int{3, 5, 6}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hyps, err := d.Beam(zeroEncoding(len(tt.srcLens), 5), tt.srcLens, tokBOS, tokEOS, tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			for s, h := range hyps {
				if got := len(h[0].Tokens); got != tt.wantLens[s] || h[0].Finished {
					t.Fatalf("sentence %d: %d words (finished %v), want %d unfinished", s, got, h[0].Finished, tt.wantLens[s])
				}
				if len(h[0].Attention) != tt.wantLens[s] || len(h[0].Attention[0]) != tt.srcLens[s] {
					t.Fatalf("sentence %d: attention %d×%d, want %d×%d", s, len(h[0].Attention), len(h[0].Attention[0]), tt.wantLens[s], tt.srcLens[s])
				}
			}
		})
	}
}

// TestLengthLimitSaturates: a ratio whose product with the source length passes the int range (1e19 × 5) caps a
// translation at MaxLen, as any ratio past MaxLen / length does, not at one word (the product's conversion to
// int had wrapped to a negative number, which max(1, ·) made 1); Validate refuses such a ratio besides.
func TestLengthLimitSaturates(t *testing.T) {
	for _, c := range []struct {
		ratio float64
		src   int
		want  int
	}{{1e19, 5, 80}, {1e300, 16384, 80}, {MaxLengthRatio, 5, 80}, {2, 5, 10}, {0.01, 5, 1}, {16, 5, 80}} {
		if got := (BeamOptions{MaxLen: 80, MaxLenRatio: c.ratio}).limit(c.src); got != c.want {
			t.Errorf("ratio %g of %d words: limit %d, want %d", c.ratio, c.src, got, c.want)
		}
	}
}

// TestBeamOptionsRejectsBadSettings: each setting out of its range, α and β past MaxAlpha and MaxBeta among them
// (an α of 1e308 made every score 0 and the n-best order arbitrary).
func TestBeamOptionsRejectsBadSettings(t *testing.T) {
	for _, o := range []BeamOptions{{Width: 0, MaxLen: 5}, {Width: 2, NBest: 3, MaxLen: 5}, {Width: 2, MaxLen: 0},
		{Width: 2, MaxLen: 5, MaxLenRatio: -1}, {Width: 2, MaxLen: 5, Alpha: -0.1}, {Width: 2, MaxLen: 5, Beta: math.NaN()},
		{Width: 2, MaxLen: 5, Alpha: 1e308}, {Width: 2, MaxLen: 5, Beta: 1e308}, {Width: 2, MaxLen: 5, MaxLenRatio: 1e19}} {
		if o.Validate() == nil {
			t.Errorf("%+v accepted", o)
		}
	}
}

// TestBeamStopsEarlyWithTheSameNBest: a sentence stops as soon as its n-best list cannot change (settled), so
// asking for fewer hypotheses than the beam width must give exactly the first ones of the full list that a
// search to the end gives, with every length and coverage penalty.
func TestBeamStopsEarlyWithTheSameNBest(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	lengths := []int{3, 1, 6, 4, 9, 2, 5, 7}
	enc := randomBlocks(rng, [][]int{lengths})[0].Enc
	for seed := uint64(1); seed <= 30; seed++ {
		d := testDecoder(t, queueVocab, seed)
		for _, width := range []int{2, 3, 5} {
			for _, pen := range [][2]float64{{0, 0}, {0.6, 0}, {0, 0.2}, {1, 0.4}} {
				opts := BeamOptions{Width: width, NBest: width, MaxLen: 14, Alpha: pen[0], Beta: pen[1]}
				full, err := d.Beam(enc, lengths, queueBOS, queueEOS, opts)
				if err != nil {
					t.Fatal(err)
				}
				for n := 1; n < width; n++ {
					opts.NBest = n
					got, err := d.Beam(enc, lengths, queueBOS, queueEOS, opts)
					if err != nil {
						t.Fatal(err)
					}
					for s := range lengths {
						if want := full[s][:min(n, len(full[s]))]; !reflect.DeepEqual(got[s], want) {
							t.Fatalf("seed %d, width %d, α %v, β %v, n-best %d, sentence %d: got %v, want %v", seed, width, pen[0], pen[1], n, s,
								scoredKeys(got[s]), scoredKeys(want))
						}
					}
				}
			}
		}
	}
}

// scoredKeys lists hypotheses' words, endings and scores, for messages.
func scoredKeys(hyps []Scored) []string {
	var out []string
	for _, h := range hyps {
		out = append(out, fmt.Sprintf("%v %v %.6f", h.Tokens, h.Finished, h.Score))
	}
	return out
}

// TestBeamSettled checks when a sentence's n-best list is final: only with n finished hypotheses, the n-th best
// of which scores at least what every live hypothesis could still reach (its log-probability, divided by the
// largest length penalty with α > 0), ties included.
func TestBeamSettled(t *testing.T) {
	finished := func(scores ...float64) []Scored {
		var hyps []Scored
		for _, s := range scores {
			hyps = append(hyps, Scored{Score: s})
		}
		return hyps
	}
	inf := math.Inf(-1)
	tests := []struct {
		name        string
		nBest       int
		alpha       float64
		finished    []Scored
		live        []float64
		wantSettled bool
	}{
		{"none finished", 1, 0, nil, []float64{-5}, false},
		{"best beats every live one", 1, 0, finished(-2), []float64{-2.5, -7}, true},
		{"a tie settles", 1, 0, finished(-2), []float64{-2, -7}, true},
		{"a live one is better", 1, 0, finished(-2), []float64{-1.5, -7}, false},
		{"unused rows do not count", 1, 0, finished(-2), []float64{-3, inf}, true},
		{"no live ones", 2, 0, finished(-2, -4), nil, true},
		{"the second best decides", 2, 0, finished(-1, -4), []float64{-3}, false},
		{"the second best beats them", 2, 0, finished(-4, -1), []float64{-5}, true},
		{"too few finished", 3, 0, finished(-1, -1), []float64{-9}, false},
		// With α = 1 and a limit of 10 words, a live hypothesis may yet be divided by (5+11)/6.
		{"a length penalty can lift a live one", 1, 1, finished(-2), []float64{-5}, false},
		{"but only so far", 1, 1, finished(-2), []float64{-5.5}, true},
		{"NaN never settles", 1, 0, finished(-2), []float64{math.NaN()}, false},
	}
	for _, tc := range tests {
		sent := &beamSent{opts: &BeamOptions{Width: 5, NBest: tc.nBest, MaxLen: 10, Alpha: tc.alpha}, finished: tc.finished}
		if got := settled(sent, 4, tc.live, &beamScratch[float64]{}); got != tc.wantSettled {
			t.Errorf("%s: settled %v, want %v", tc.name, got, tc.wantSettled)
		}
	}
}

// TestPushRowCutsExactly: pushRow passes over the words whose logits fall below its cut without computing their
// log-probabilities; the list must be exactly the one of pushing every word through pushCandidate, with ties
// (repeated logits), NaN, -Inf and large log-probabilities, in float32 and float64.
func TestPushRowCutsExactly(t *testing.T) {
	testPushRowCutsExactly[float32](t)
	testPushRowCutsExactly[float64](t)
}

// nextUp returns the smallest E above x.
func nextUp[E interface{ ~float32 | ~float64 }](x E) E {
	if f, ok := any(x).(float32); ok {
		return E(math.Nextafter32(f, float32(math.Inf(1))))
	}
	return E(math.Nextafter(float64(x), math.Inf(1)))
}

func testPushRowCutsExactly[E interface{ ~float32 | ~float64 }](t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 8))
	for trial := range 300 {
		n := 1 + rng.IntN(400)
		logits := make([]E, n)
		for i := range logits {
			switch r := rng.IntN(20); {
			case r == 0:
				logits[i] = E(math.NaN())
			case r == 1:
				logits[i] = E(math.Inf(-1))
			case r < 6 && i > 0:
				logits[i] = logits[rng.IntN(i)] // a tie
			case r < 10 && i > 0:
				logits[i] = nextUp(logits[rng.IntN(i)]) // just above another
			default:
				logits[i] = E(rng.NormFloat64() * 10)
			}
		}
		base := []float64{0, -3.7, -1234.5678, -1e-9}[trial%4]
		lse := []float64{0, 12.345678, -7.25, 1e6}[trial/4%4]
		size := 1 + rng.IntN(12)
		if list := pushRow(nil, logits, lse, base, 3, nil, size); trial%2 == 0 && len(list) == size {
			// A tie of the list's last entry, then a logit just above it, which must enter.
			last := logits[list[size-1].token]
			logits = append(logits, last, nextUp(last))
		}
		var want []candidate
		for i, x := range logits {
			want = pushCandidate(want, candidate{logProb: base + (float64(x) - lse), row: 3, token: i}, size)
		}
		if got := pushRow(nil, logits, lse, base, 3, nil, size); !slices.Equal(got, want) {
			t.Fatalf("%T trial %d: pushRow %v, pushCandidate %v", E(0), trial, got, want)
		}
	}
}

// TestShortCut: the cut of a log-probability last is a logit whose log-probability is at most last (so that every
// logit up to it falls short) and, for a last that is a word's log-probability, within a few steps of that
// word's logit, up to float64 rounding (so that the cut passes over nearly every word it can).
func TestShortCut(t *testing.T) {
	testShortCut[float32](t)
	testShortCut[float64](t)
}

func testShortCut[E interface{ ~float32 | ~float64 }](t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	for range 20000 {
		x := E(rng.NormFloat64() * 20)
		base, lse := -rng.ExpFloat64()*30, rng.NormFloat64()*30
		last := base + (float64(x) - lse)
		c, ok := shortCut[E](last, lse, base)
		if !ok || base+(float64(c)-lse) > last {
			t.Fatalf("%T: cut of %v (base %v, lse %v) is %v (%v): log-probability %v", E(0), last, base, lse, c, ok, base+(float64(c)-lse))
		}
		for range 8 {
			c = nextUp(c)
		}
		// float64 sums lose up to a few ulps of their largest terms, which cancel: so much below, or 8 steps.
		if tol := 1e-14 * (1 + math.Abs(last) + math.Abs(base) + math.Abs(lse)); float64(c) < float64(x)-tol {
			t.Fatalf("%T: cut of %v (base %v, lse %v) far below the logit %v", E(0), last, base, lse, x)
		}
	}
	if _, ok := shortCut[E](math.NaN(), 0, 0); ok {
		t.Fatalf("%T: a cut of NaN", E(0))
	}
}

// TestBeamStopsWhenStopIsClosed: a closed BeamOptions.Stop ends the search before its next step with
// ErrStopped (issue #51's case 6: a wide beam's search went on for 37 s after Ctrl-C); a nil one never does.
func TestBeamStopsWhenStopIsClosed(t *testing.T) {
	d := bigramDecoder(t, map[int]map[int]float64{
		tokBOS: {tokA: 0.6, tokB: 0.4},
		tokA:   {tokB: 0.9, tokEOS: 0.1},
		tokB:   {tokA: 0.9, tokEOS: 0.1},
	})
	stop := make(chan struct{})
	close(stop)
	if hyps, err := d.Beam(zeroEncoding(2, 5), []int{3, 5}, tokBOS, tokEOS, BeamOptions{Width: 2, MaxLen: 50, Stop: stop}); !errors.Is(err, ErrStopped) || hyps != nil {
		t.Fatalf("stopped search: %d lists, %v; want none and ErrStopped", len(hyps), err)
	}
	if hyps, err := d.Beam(zeroEncoding(2, 5), []int{3, 5}, tokBOS, tokEOS, BeamOptions{Width: 2, MaxLen: 50}); err != nil || len(hyps) != 2 {
		t.Fatalf("search without Stop: %d lists, %v", len(hyps), err)
	}
}
