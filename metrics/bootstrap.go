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

// Resamples are bootstrap resamples of a test set (Koehn 2004): Sentences[k] lists the sentences of resample k,
// drawn uniformly with replacement, as many as the test set has. Scoring two systems on the same Resamples pairs
// them sentence by sentence.
type Resamples struct {
	Sentences [][]int
}

// NewResamples draws n resamples of a test set of the given size from a PCG generator seeded with seed, so the
// same arguments give the same resamples. It panics unless n and size are positive.
func NewResamples(size, n int, seed uint64) Resamples {
	if size <= 0 || n <= 0 {
		panic(fmt.Sprintf("metrics: %d resamples of %d sentences", n, size))
	}
	rng := rand.New(rand.NewPCG(seed, 0))
	r := Resamples{Sentences: make([][]int, n)}
	for k := range r.Sentences {
		draw := make([]int, size)
		for i := range draw {
			draw[i] = rng.IntN(size)
		}
		r.Sentences[k] = draw
	}
	return r
}

// ResampledScores is the score of each resample: score applied to the sum of the counts of its sentences.
// counts[i] are sentence i's counts; it panics if a resample names a sentence counts does not have.
func ResampledScores[C Counts[C]](r Resamples, counts []C, score func(C) float64) []float64 {
	scores := make([]float64, len(r.Sentences))
	for k, draw := range r.Sentences {
		var sum C
		for _, i := range draw {
			sum = sum.Add(counts[i])
		}
		scores[k] = score(sum)
	}
	return scores
}

// Interval is a bootstrap estimate of a score: the mean over the resamples and the half-width of the range that
// holds their central 95%, as sacreBLEU reports them ("μ = 34.75 ± 0.80").
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
