package metrics

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
)

// Counts are a corpus metric's additive sufficient statistics: a corpus score depends only on the sum of its
// sentences' counts. BLEUCounts and ChrFCounts are Counts.
type Counts[C any] interface {
	Add(C) C
}

// Resamples are N bootstrap resamples of a test set of Size sentences (Koehn 2004): resample k draws Size
// sentences uniformly with replacement from a PCG generator seeded with (Seed, k), so each resample is the same
// whenever it is drawn and none is kept in memory. Scoring two systems on the same Resamples pairs them sentence
// by sentence.
type Resamples struct {
	N, Size int
	Seed    uint64
}

// Draw fills draw (Size long) with the sentences of resample k.
func (r Resamples) Draw(k int, draw []int) {
	rng := rand.New(rand.NewPCG(r.Seed, uint64(k)))
	for i := range draw[:r.Size] {
		draw[i] = rng.IntN(r.Size)
	}
}

// ResampledScores is the score of each resample: score applied to the sum of the counts of its sentences.
// counts[i] are sentence i's counts. It panics unless there are resamples, of as many sentences as counts has.
func ResampledScores[C Counts[C]](r Resamples, counts []C, score func(C) float64) []float64 {
	if r.N <= 0 || r.Size <= 0 || r.Size != len(counts) {
		panic(fmt.Sprintf("metrics: %d resamples of %d sentences for %d sentences' counts", r.N, r.Size, len(counts)))
	}
	scores := make([]float64, r.N)
	draw := make([]int, r.Size)
	for k := range scores {
		r.Draw(k, draw)
		var sum C
		for _, i := range draw {
			sum = sum.Add(counts[i])
		}
		scores[k] = score(sum)
	}
	return scores
}

// Interval is a bootstrap estimate of a score: the mean over the resamples and the half-width of the range that
// holds their central 95%, as sacreBLEU reports them ("μ = 34.76 ± 1.55").
type Interval struct {
	Mean, HalfWidth float64
}

// ConfidenceInterval estimates the 95% interval from resampled scores as sacreBLEU's estimate_ci does: sorted,
// the bounds are the scores at index n/40 (integer division) from each end, and the half-width is half their
// distance. It panics on no scores.
func ConfidenceInterval(scores []float64) Interval {
	if len(scores) == 0 {
		panic("metrics: a confidence interval of no scores")
	}
	sorted := slices.Sorted(slices.Values(scores))
	lower := len(sorted) / 40
	upper := len(sorted) - lower - 1
	sum := 0.0
	for _, s := range sorted {
		sum += s
	}
	return Interval{Mean: sum / float64(len(sorted)), HalfWidth: (sorted[upper] - sorted[lower]) / 2}
}

// PairedTest is a paired bootstrap test of a system against a baseline.
type PairedTest struct {
	// Delta is the system's score minus the baseline's, on the whole test set.
	Delta float64
	// P is the two-sided p-value of Delta under the hypothesis that both systems are equally good: the share of
	// resamples whose difference, centred on the resamples' mean difference, is at least |Delta| in size, with one
	// added above and below ((c+1)/(n+1)) so that it is never 0. A p below 0.05 is the usual mark of a real
	// difference.
	P float64
	// Wins is the share of resamples on which the system scores above the baseline (Koehn 2004 calls the system
	// better with 95% confidence when Wins is at least 0.95).
	Wins float64
}

// PairedBootstrap tests a system against a baseline from their scores on the whole test set and on the same
// resamples (Koehn 2004; the centring is Moses' bootstrap-hypothesis-difference-significance.pl's and
// sacreBLEU's). Unlike sacreBLEU, it centres the signed differences rather than their absolute values and counts
// differences as large as |Delta| as well as larger ones, so a system tested against itself gets p = 1 rather
// than 1/(n+1). It panics if the two systems have different numbers of resampled scores, or none.
func PairedBootstrap(baseline, system float64, baselineResampled, systemResampled []float64) PairedTest {
	n := len(systemResampled)
	if n == 0 || len(baselineResampled) != n {
		panic(fmt.Sprintf("metrics: paired bootstrap of %d against %d resampled scores", n, len(baselineResampled)))
	}
	t := PairedTest{Delta: system - baseline}
	diffs := make([]float64, n)
	mean := 0.0
	wins := 0
	for k := range diffs {
		diffs[k] = systemResampled[k] - baselineResampled[k]
		mean += diffs[k]
		if diffs[k] > 0 {
			wins++
		}
	}
	mean /= float64(n)
	atLeast := 0
	for _, d := range diffs {
		if math.Abs(d-mean) >= math.Abs(t.Delta) {
			atLeast++
		}
	}
	t.P = float64(atLeast+1) / float64(n+1)
	t.Wins = float64(wins) / float64(n)
	return t
}

// ApproximateRandomization is the paired approximate randomization test of a system against a baseline
// (Riezler and Maxwell 2005; sacreBLEU's --paired-ar), from their sentences' counts: each of trials swaps each
// sentence's counts between the two systems with probability 1/2 (trial k's coins come from a PCG generator
// seeded with (seed, k)), and P is the share of trials whose two scores differ by at least |Delta|, with one
// added above and below ((c+1)/(trials+1)). A system against itself gets p = 1. Wins is NaN: the test has no
// resamples to win. It panics unless both systems have the same number of sentences, and trials is positive.
func ApproximateRandomization[C Counts[C]](baseline, system []C, score func(C) float64, trials int, seed uint64) PairedTest {
	if len(baseline) != len(system) || trials <= 0 {
		panic(fmt.Sprintf("metrics: %d trials of %d against %d sentences", trials, len(system), len(baseline)))
	}
	var sumB, sumS C
	for i := range baseline {
		sumB, sumS = sumB.Add(baseline[i]), sumS.Add(system[i])
	}
	t := PairedTest{Delta: score(sumS) - score(sumB), Wins: math.NaN()}
	atLeast := 0
	for k := range trials {
		rng := rand.New(rand.NewPCG(seed, uint64(k)))
		var a, b C
		var coins uint64
		for i := range baseline {
			if i%64 == 0 {
				coins = rng.Uint64()
			}
			if coins&1 == 0 {
				a, b = a.Add(baseline[i]), b.Add(system[i])
			} else {
				a, b = a.Add(system[i]), b.Add(baseline[i])
			}
			coins >>= 1
		}
		if math.Abs(score(a)-score(b)) >= math.Abs(t.Delta) {
			atLeast++
		}
	}
	t.P = float64(atLeast+1) / float64(trials+1)
	return t
}
