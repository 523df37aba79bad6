package metrics

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// randomCorpus makes n reference sentences of random words and hypotheses that keep each word with probability
// keep (else a wrong word), so scores vary from sentence to sentence.
func randomCorpus(rng *rand.Rand, n int, keep float64) (hyps, refs [][]string) {
	for range n {
		var r []string
		for range 3 + rng.IntN(12) {
			r = append(r, fmt.Sprintf("w%d", rng.IntN(30)))
		}
		refs = append(refs, r)
	}
	return noisy(rng, refs, keep), refs
}

// noisy copies refs, replacing each word by a wrong one with probability 1-keep.
func noisy(rng *rand.Rand, refs [][]string, keep float64) [][]string {
	hyps := make([][]string, len(refs))
	for i, r := range refs {
		for _, w := range r {
			if rng.Float64() >= keep {
				w = fmt.Sprintf("x%d", rng.IntN(30))
			}
			hyps[i] = append(hyps[i], w)
		}
	}
	return hyps
}

// A resample's score from summed counts must be the score of the resampled corpus written out in full, for
// BLEU (both smoothings) and chrF.
func TestResampledScoresMatchScoringTheResampledCorpus(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	hyps, refs := randomCorpus(rng, 9, 0.6)
	bleuCounts := make([]BLEUCounts, len(hyps))
	chrfCounts := make([]ChrFCounts, len(hyps))
	hypText, refText := make([]string, len(hyps)), make([]string, len(hyps))
	for i := range hyps {
		bleuCounts[i] = SentenceBLEUCounts(hyps[i], refs[i])
		hypText[i], refText[i] = strings.Join(hyps[i], " "), strings.Join(refs[i], " ")
		chrfCounts[i] = SentenceChrFCounts(hypText[i], refText[i])
	}
	r := Resamples{N: 25, Size: len(hyps), Seed: 7}
	draw := make([]int, r.Size)
	for _, smooth := range []Smoothing{SmoothNone, SmoothExp} {
		got := ResampledScores(r, bleuCounts, func(c BLEUCounts) float64 { return BLEUFromCounts(c, smooth).Score })
		for k := range r.N {
			r.Draw(k, draw)
			var h, ref [][]string
			for _, i := range draw {
				h, ref = append(h, hyps[i]), append(ref, refs[i])
			}
			if want := CorpusBLEU(h, ref, smooth).Score; got[k] != want {
				t.Fatalf("%s resample %d: BLEU from counts %v, of the written-out corpus %v", smooth, k, got[k], want)
			}
		}
	}
	got := ResampledScores(r, chrfCounts, func(c ChrFCounts) float64 { return ChrFFromCounts(c).Score })
	for k := range r.N {
		r.Draw(k, draw)
		var h, ref []string
		for _, i := range draw {
			h, ref = append(h, hypText[i]), append(ref, refText[i])
		}
		if want := ChrF(h, ref).Score; got[k] != want {
			t.Fatalf("resample %d: chrF from counts %v, of the written-out corpus %v", k, got[k], want)
		}
	}
}

func TestResamplesDrawUniformlyAndRepeatably(t *testing.T) {
	const size, n = 50, 2000
	r := Resamples{N: n, Size: size, Seed: 12345}
	other := Resamples{N: n, Size: size, Seed: 12346}
	draw, again, otherDraw := make([]int, size), make([]int, size), make([]int, size)
	drawn := make([]int, size)
	sameAsOther := 0
	for k := n - 1; k >= 0; k-- { // backwards: a resample does not depend on the ones drawn before it
		r.Draw(k, draw)
		r.Draw(k, again)
		other.Draw(k, otherDraw)
		for j, i := range draw {
			if i != again[j] {
				t.Fatalf("resample %d drew differently the second time", k)
			}
			if i == otherDraw[j] {
				sameAsOther++
			}
			drawn[i]++
		}
	}
	// Each sentence is drawn n·size·(1/size) = n times on average, with standard deviation about sqrt(n).
	for i, c := range drawn {
		if math.Abs(float64(c-n)) > 5*math.Sqrt(n) {
			t.Fatalf("sentence %d drawn %d times, want about %d", i, c, n)
		}
	}
	if frac := float64(sameAsOther) / (size * n); frac > 0.03 {
		t.Fatalf("seeds 12345 and 12346 agree on %.3f of draws, want about 1/%d", frac, size)
	}
	r.Draw(0, draw)
	r.Draw(1, again)
	if slices.Equal(draw, again) {
		t.Fatalf("resamples 0 and 1 are the same: %v", draw)
	}
}

func TestConfidenceIntervalHandComputed(t *testing.T) {
	// 1..40 in a scrambled order: mean 20.5; 40/40 = 1, so the bounds are sorted[1] = 2 and sorted[38] = 39.
	var scores []float64
	for i := range 40 {
		scores = append(scores, float64((i*17)%40+1))
	}
	if got := ConfidenceInterval(scores); got != (Interval{Mean: 20.5, HalfWidth: 18.5}) {
		t.Fatalf("1..40: %+v, want mean 20.5 ± 18.5", got)
	}
	// Under 40 scores the bounds are the smallest and the largest.
	if got := ConfidenceInterval([]float64{3, 1, 4, 1, 5}); got != (Interval{Mean: 2.8, HalfWidth: 2}) {
		t.Fatalf("3 1 4 1 5: %+v, want mean 2.8 ± 2", got)
	}
}

func TestPairedBootstrapHandComputed(t *testing.T) {
	baseline, system := []float64{1, 2, 3, 4}, []float64{2, 2, 5, 4}
	// Differences 1, 0, 2, 0 with mean 0.75; centred sizes 0.25, 0.75, 1.25, 0.75. System 2 wins twice.
	tests := []struct {
		base, sys float64
		wantP     float64
	}{
		{4, 5, 2.0 / 5},      // |Delta| = 1: only 1.25 is as large
		{4, 3.25, 4.0 / 5},   // |Delta| = 0.75: 0.75, 1.25 and 0.75
		{4, 6, 1.0 / 5},      // |Delta| = 2: none
		{4, 4, 5.0 / 5},      // no difference: all four
		{4.5, 4.25, 5.0 / 5}, // |Delta| = 0.25: all four
	}
	for _, tt := range tests {
		got := PairedBootstrap(tt.base, tt.sys, baseline, system)
		if got.P != tt.wantP || got.Wins != 0.5 || got.Delta != tt.sys-tt.base {
			t.Fatalf("%v against %v: %+v, want P %v, Wins 0.5", tt.sys, tt.base, got, tt.wantP)
		}
	}
}

// On real BLEU, by paired bootstrap and by approximate randomization: a system tested against itself is no
// different (p = 1); a system that is right where the baseline is wrong on every sentence differs on every
// resample and trial (p = 1/(n+1)); two systems that are right on different halves of the test set do not differ
// significantly.
func TestPairedBootstrapOnBLEU(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	weak, refs := randomCorpus(rng, 200, 0.5)
	strong := noisy(rng, refs, 0.9)
	evenRight, oddRight := make([][]string, len(refs)), make([][]string, len(refs))
	for i := range refs {
		evenRight[i], oddRight[i] = weak[i], refs[i]
		if i%2 == 0 {
			evenRight[i], oddRight[i] = refs[i], weak[i]
		}
	}
	const n = 1000
	r := Resamples{N: n, Size: len(refs), Seed: 12345}
	score := func(c BLEUCounts) float64 { return BLEUFromCounts(c, SmoothExp).Score }
	test := func(base, sys [][]string) PairedTest {
		bc, sc := make([]BLEUCounts, len(refs)), make([]BLEUCounts, len(refs))
		for i := range refs {
			bc[i], sc[i] = SentenceBLEUCounts(base[i], refs[i]), SentenceBLEUCounts(sys[i], refs[i])
		}
		return PairedBootstrap(CorpusBLEU(base, refs, SmoothExp).Score, CorpusBLEU(sys, refs, SmoothExp).Score,
			ResampledScores(r, bc, score), ResampledScores(r, sc, score))
	}
	ar := func(base, sys [][]string) PairedTest {
		bc, sc := make([]BLEUCounts, len(base)), make([]BLEUCounts, len(base))
		for i := range base {
			bc[i], sc[i] = SentenceBLEUCounts(base[i], refs[i]), SentenceBLEUCounts(sys[i], refs[i])
		}
		return ApproximateRandomization(bc, sc, score, n, 12345)
	}
	for _, tt := range []struct {
		name       string
		base, sys  [][]string
		pMin, pMax float64
	}{
		{"a system against itself", weak, weak, 1, 1},
		{"0.9 of words right against 0.5", weak, strong, 1.0 / (n + 1), 1.0 / (n + 1)},
		{"right on odd sentences against right on even ones", evenRight, oddRight, 0.2, 1},
		{"one sentence: either swap differs by |Delta|", weak[:1], strong[:1], 1, 1},
	} {
		got := ar(tt.base, tt.sys)
		want := CorpusBLEU(tt.sys, refs[:len(tt.sys)], SmoothExp).Score - CorpusBLEU(tt.base, refs[:len(tt.base)], SmoothExp).Score
		if got.P < tt.pMin || got.P > tt.pMax || got.Delta != want || !math.IsNaN(got.Wins) {
			t.Fatalf("approximate randomization, %s: %+v, want p in [%v, %v], delta %v", tt.name, got, tt.pMin, tt.pMax, want)
		}
	}

	if got := test(weak, weak); got.P != 1 || got.Wins != 0 || got.Delta != 0 {
		t.Fatalf("a system against itself: %+v, want p 1, no wins", got)
	}
	if got := test(weak, strong); got.P != 1.0/(n+1) || got.Wins != 1 || got.Delta < 20 {
		t.Fatalf("0.9 of words right against 0.5: %+v, want p 1/%d, wins 1 and a large delta", got, n+1)
	}
	if got := test(evenRight, oddRight); got.P < 0.2 || got.Wins < 0.1 || got.Wins > 0.9 {
		t.Fatalf("right on odd sentences against right on even ones: %+v, want no significant difference", got)
	}
}
