// Package wordalign finds which words of a sentence translate which words of its translation, from a parallel
// corpus alone: fast_align's model (Dyer, Chahuneau and Smith 2013, "A Simple, Fast, and Effective
// Reparameterization of IBM Model 2"), optionally followed by the HMM alignment model (Vogel, Ney and Tillmann
// 1996; hmm.go) that starts from its lexical table, trained by expectation maximisation on all cores, the most
// probable links in each direction combined by a symmetrization heuristic (package align). Without the diagonal
// prior the model is IBM Model 1 (Brown et al. 1993), which package lexicon uses for its shortlists.
//
// The model explains each target word by one word of the source sentence or by the empty word: the lexical
// table t(f | e) says how likely source word e translates into target word f, and the diagonal prior (see
// diagonal.go) how likely target position i of m is to come from source position j of n. EM re-estimates the
// lexical table from the expected links, optionally under a Dirichlet prior by variational Bayes, and the
// prior's tension by a few gradient steps; each target word is then linked to its most probable source word,
// or to none when the empty word is more probable.
package wordalign

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/attend-nmt/attend/align"
	"github.com/attend-nmt/attend/data"
	"gonum.org/v1/gonum/mathext"
)

// Options set the model and its training. The zero value is not usable: start from DefaultOptions (fast_align's
// recommended -d -o -v), or set Iterations alone for IBM Model 1 with plain EM.
type Options struct {
	// Iterations is the number of EM updates of the parameters, at least 1. fast_align's -I counts its final
	// pass, which only aligns, as an iteration too: its default -I 5 is 4 updates.
	Iterations int
	// Diagonal favours links near the diagonal (fast_align -d). Without it every source position and the empty
	// word are equally likely a priori: IBM Model 1.
	Diagonal bool
	// Tension is the diagonal prior's starting λ (fast_align -T, default 4), positive.
	Tension float64
	// OptimizeTension re-estimates the tension after every E-step but the first (fast_align -o), exactly as
	// fast_align does: see optimizeTension.
	OptimizeTension bool
	// NullProb is p0, the prior probability of the empty word under the diagonal prior (fast_align -q, default
	// 0.08), in [0, 1).
	NullProb float64
	// Alpha > 0 puts a symmetric Dirichlet prior with this concentration on every row of the lexical table and
	// re-estimates it by variational Bayes (fast_align -v -a, default 0.01): t(f | e) = exp(ψ(c(e,f) + α) −
	// ψ(Σ_f' (c(e,f') + α))) over the target words f' seen with e, which favours few translations per word.
	// 0 is plain maximum likelihood.
	Alpha float64
	// HMMIterations > 0 trains the HMM alignment model (see hmm.go) for this many EM iterations after the
	// iterations above, starting from their lexical table, and aligns with it. 0 aligns with fast_align's model.
	HMMIterations int
	// HMMNullProb is the HMM's p0, the probability of going to an empty state, in [0, 1).
	HMMNullProb float64
	// MaxJump is the longest jump, in source positions, that the HMM's jump distribution tells apart; longer
	// ones share its bucket. At least 1 with the HMM.
	MaxJump int
	// Workers is how many goroutines share each pass over the corpus (0: GOMAXPROCS). The result does not
	// depend on it.
	Workers int
	// Progress, when set, is called as the passes advance, from one goroutine at a time.
	Progress func(Progress)
}

// DefaultOptions returns fast_align's recommended settings, -d -o -v, with its defaults for the rest: 4 EM
// updates (its -I 5), tension 4, p0 0.08, α 0.01.
func DefaultOptions() Options {
	return Options{Iterations: 4, Diagonal: true, Tension: 4, OptimizeTension: true, NullProb: 0.08, Alpha: 0.01}
}

// DefaultModel is the model ModelOptions names by default: the HMM, which aligns the Hansards better than
// fast_align's model alone (docs/alignment.md).
const DefaultModel = "hmm"

// ModelOptions returns the options of a model by name: "fast_align" is DefaultOptions; "hmm" adds five
// iterations of the HMM (hmm.go) with GIZA++'s p0 of 0.4 and jumps told apart up to 10 positions.
func ModelOptions(name string) (Options, error) {
	opts := DefaultOptions()
	switch name {
	case "fast_align":
	case "hmm":
		opts.HMMIterations, opts.HMMNullProb, opts.MaxJump = 5, 0.4, 10
	default:
		return Options{}, fmt.Errorf("wordalign: unknown model %q; want hmm or fast_align", name)
	}
	return opts, nil
}

// Validate reports a setting out of range, naming it.
func (o Options) Validate() error {
	switch {
	case o.Iterations < 1:
		return fmt.Errorf("wordalign: %d iterations; want at least 1", o.Iterations)
	case o.Diagonal && !(o.Tension > 0):
		return fmt.Errorf("wordalign: tension %g; want a positive number", o.Tension)
	case o.Diagonal && !(o.NullProb >= 0 && o.NullProb < 1):
		return fmt.Errorf("wordalign: empty word probability %g; want one in [0, 1)", o.NullProb)
	case !(o.Alpha >= 0) || math.IsInf(o.Alpha, 1):
		return fmt.Errorf("wordalign: Dirichlet concentration %g; want 0 (none) or a positive number", o.Alpha)
	case o.HMMIterations < 0:
		return fmt.Errorf("wordalign: %d HMM iterations; want 0 (none) or more", o.HMMIterations)
	case o.HMMIterations > 0 && !(o.HMMNullProb >= 0 && o.HMMNullProb < 1):
		return fmt.Errorf("wordalign: HMM empty word probability %g; want one in [0, 1)", o.HMMNullProb)
	case o.HMMIterations > 0 && o.MaxJump < 1:
		return fmt.Errorf("wordalign: HMM maximum jump %d; want at least 1", o.MaxJump)
	case o.Workers < 0:
		return fmt.Errorf("wordalign: %d workers; want 0 (every core) or more", o.Workers)
	}
	return nil
}

// Progress tells how far a pass over the corpus has come.
type Progress struct {
	Direction  string // "forward" or "reverse" when Align trains both; empty for Train and Model.Align
	HMM        bool   // the pass trains the HMM (Options.HMMIterations)
	Iteration  int    // the EM iteration, 1-based; 0 for the pass that aligns
	Iterations int    // Options.Iterations, or Options.HMMIterations for the HMM
	Done       int    // sentence pairs of this pass done
	Total      int    // sentence pairs of the corpus
	// Stats, when an EM iteration has just finished, is what it found; nil otherwise.
	Stats *IterationStats
}

// Pass names the pass: "forward EM 2/4", "reverse aligning", "EM 1/4".
func (p Progress) Pass() string {
	name := p.Direction
	if name != "" {
		name += " "
	}
	if p.Iteration == 0 {
		return name + "aligning"
	}
	if p.HMM {
		name += "HMM "
	}
	return fmt.Sprintf("%sEM %d/%d", name, p.Iteration, p.Iterations)
}

// IterationStats describes one EM iteration.
type IterationStats struct {
	// LogLikelihood is the mean natural log-probability of a target word under the parameters the iteration
	// started from.
	LogLikelihood float64
	// NullShare is the share of target words the E-step linked to the empty word (its posterior mean).
	NullShare float64
	// Tension is the diagonal prior's λ after the iteration's update.
	Tension float64
}

// Model is a trained alignment model of one direction: source words explain target words.
type Model struct {
	srcSize, tgtSize int
	pairs            *table
	// prob[k] is t(f | e) of the pair pairs.tgt[k] in row e. Under variational Bayes the rows need not sum to 1.
	prob    []float64
	tension float64
	// jump is the HMM's jump distribution s by bucket (see hmm.go), nil without the HMM.
	jump []float64
	opts Options
	// Stats has one entry per EM iteration, the HMM's last.
	Stats []IterationStats
}

// countScale is the fixed-point unit of the expected counts: a link's posterior p adds round(p·2³²) to its
// pair's count. Integer sums do not depend on the order of the additions, so the workers add into one shared
// table and the counts come out bit for bit the same whatever their number; the rounding (at most 2⁻³³ per
// link) is far below the counts that matter, and a pair may gather up to 2³¹ links.
const countScale = 1 << 32

// chunkSize is the number of sentence pairs a worker takes at a time. Per-chunk sums (log-likelihood, feature
// means) are added in chunk order, so they too are the same for any number of workers.
const chunkSize = 256

// tensionSteps, tensionRate and the bounds are fast_align's tension optimisation.
const (
	tensionSteps           = 8
	tensionRate            = 20.0
	minTension, maxTension = 0.1, 14.0
	unseenProb             = 1e-9 // t(f | e) of a pair never seen in training (fast_align's safe_prob)
)

// Train estimates a model on examples: source and target ids below srcSize and tgtSize (an id outside is an
// error). A pair with an empty target teaches nothing; one with an empty source links its target words to the
// empty word. A cancelled ctx stops training between chunks of sentence pairs with ctx's error.
func Train(ctx context.Context, examples []data.Example, srcSize, tgtSize int, opts Options) (*Model, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	if srcSize < 0 || tgtSize < 0 {
		return nil, fmt.Errorf("wordalign: vocabulary sizes %d and %d", srcSize, tgtSize)
	}
	if err := checkIDs(examples, srcSize, tgtSize); err != nil {
		return nil, err
	}
	m := &Model{srcSize: srcSize, tgtSize: tgtSize, pairs: newTable(examples, srcSize), tension: opts.Tension, opts: opts}
	counts := make([]int64, m.pairs.size())
	// The target words and the (m, n) sentence lengths, for the tension's gradient.
	targetWords := 0
	lengths := map[[2]int]int{}
	for _, ex := range examples {
		targetWords += len(ex.Tgt)
		if len(ex.Tgt) > 0 && len(ex.Src) > 0 {
			lengths[[2]int{len(ex.Tgt), len(ex.Src)}]++
		}
	}
	sizes := sortedLengths(lengths)
	cache := m.pairs.newIndexCache(examples, srcSize, m.workers())
	for it := 1; it <= opts.Iterations; it++ {
		clear(counts)
		sums, err := m.pass(ctx, examples, Progress{Iteration: it, Iterations: opts.Iterations},
			func(k int, s *scratch, sum *chunkSums) { m.expect(examples[k], cache.of(k), it == 1, s, counts, sum) })
		if err != nil {
			return nil, err
		}
		stats := IterationStats{}
		if targetWords > 0 {
			stats.LogLikelihood = sums.logLikelihood / float64(targetWords)
			stats.NullShare = sums.null / float64(targetWords)
		}
		if opts.Diagonal && opts.OptimizeTension && it > 1 && targetWords > 0 {
			m.tension = optimizeTension(m.tension, sums.feature/float64(targetWords), sizes, targetWords)
		}
		stats.Tension = m.tension
		m.normalize(counts)
		m.Stats = append(m.Stats, stats)
		if opts.Progress != nil {
			opts.Progress(Progress{Iteration: it, Iterations: opts.Iterations, Done: len(examples), Total: len(examples), Stats: &stats})
		}
	}
	if opts.HMMIterations > 0 {
		if err := m.trainHMM(ctx, examples, cache, targetWords); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// Align links each target word of every example to its most probable source word under the model (Viterbi),
// or leaves it unlinked when the empty word is more probable; a tie goes to the empty word, then to the first
// source word, as in fast_align. The links of a pair come sorted by source, then target position. Pairs need
// not come from training: a pair of words never seen together gets t = 1e-9, as in fast_align's forced
// alignment. Ids outside the model's vocabularies are an error.
func (m *Model) Align(ctx context.Context, examples []data.Example) ([][]align.Link, error) {
	if err := checkIDs(examples, m.srcSize, m.tgtSize); err != nil {
		return nil, err
	}
	links := make([][]align.Link, len(examples))
	p := Progress{Iterations: m.opts.Iterations, Total: len(examples)}
	_, err := m.pass(ctx, examples, p, func(k int, s *scratch, _ *chunkSums) {
		if m.jump != nil {
			links[k] = m.hmmViterbi(examples[k], s)
		} else {
			links[k] = m.viterbi(examples[k], s)
		}
	})
	if err != nil {
		return nil, err
	}
	if m.opts.Progress != nil {
		p.Done = len(examples)
		m.opts.Progress(p)
	}
	return links, nil
}

// scratch is one worker's buffers.
type scratch struct {
	probs []float64 // the empty word's, then each source position's share of a target word
	at    []int     // the pair index of each, -1 for a pair not in the table (never, in training)
	hmm   hmmScratch
}

// chunkSums are the per-chunk sums of an E-step.
type chunkSums struct {
	logLikelihood float64   // Σ log p(target word)
	null          float64   // Σ posterior of the empty word
	feature       float64   // Σ posterior · h(i−1, j, m, n) over the source positions (see optimizeTension)
	jumps         []float64 // the HMM's expected jumps by bucket; nil before the chunk's first
}

func (c *chunkSums) add(o chunkSums) {
	c.logLikelihood += o.logLikelihood
	c.null += o.null
	c.feature += o.feature
	if c.jumps == nil && o.jumps != nil {
		c.jumps = make([]float64, len(o.jumps))
	}
	for d, n := range o.jumps {
		c.jumps[d] += n
	}
}

// shares fills s.probs with the joint probability of each link of target word i (1-based) of ex: index 0 the
// empty word, j the source word j; uniform says every t(f | e) is still equal (the first iteration), so only
// the prior counts. cached, when not nil, is ex's table indices (indexCache). It returns their sum.
func (m *Model) shares(ex data.Example, cached []int32, i int, uniform bool, s *scratch) float64 {
	n, mm := len(ex.Src), len(ex.Tgt)
	s.probs, s.at = s.probs[:0], s.at[:0]
	lex := func(j int) (float64, int) {
		k, ok := m.lookUp(ex, cached, i-1, j)
		switch {
		case !ok:
			return unseenProb, -1
		case uniform:
			return 1, k
		}
		return m.prob[k], k
	}
	uniformPrior := 1 / float64(n+1)
	nullPrior, z := uniformPrior, 0.0
	if m.opts.Diagonal {
		nullPrior = m.opts.NullProb
		z = diagonalZ(i, mm, n, m.tension) / (1 - m.opts.NullProb)
	}
	t, k := lex(0)
	s.probs, s.at = append(s.probs, t*nullPrior), append(s.at, k)
	sum := s.probs[0]
	for j := 1; j <= n; j++ {
		prior := uniformPrior
		if m.opts.Diagonal {
			prior = math.Exp(m.tension*feature(i, j, mm, n)) / z
		}
		t, k := lex(j)
		p := t * prior
		s.probs, s.at = append(s.probs, p), append(s.at, k)
		sum += p
	}
	return sum
}

// lookUp is the table index of the pair of target word i (0-based) of ex and its source word j (1-based) or the
// empty word (j = 0), and whether the table has it; cached, when not nil, is ex's indices (indexCache).
func (m *Model) lookUp(ex data.Example, cached []int32, i, j int) (int, bool) {
	if cached != nil {
		return int(cached[i*(len(ex.Src)+1)+j]), true
	}
	e := m.srcSize
	if j > 0 {
		e = ex.Src[j-1]
	}
	return m.pairs.index(e, ex.Tgt[i])
}

// expect adds one sentence pair's expected link counts to counts (atomically, in fixed point) and its sums to
// sum; cached, when not nil, is its table indices (indexCache).
func (m *Model) expect(ex data.Example, cached []int32, uniform bool, s *scratch, counts []int64, sum *chunkSums) {
	n, mm := len(ex.Src), len(ex.Tgt)
	for i := 1; i <= mm; i++ {
		total := m.shares(ex, cached, i, uniform, s)
		if !(total > 0) {
			continue // every link has probability 0: nothing to learn from this word
		}
		if uniform { // shares took every t(f | e) as 1: the table is uniform over the target words
			sum.logLikelihood += math.Log(total / float64(m.tgtSize))
		} else {
			sum.logLikelihood += math.Log(total)
		}
		for j, p := range s.probs {
			post := p / total
			atomic.AddInt64(&counts[s.at[j]], int64(post*countScale+0.5))
			if j == 0 {
				sum.null += post
			} else {
				sum.feature += feature(i-1, j, mm, n) * post
			}
		}
	}
}

// viterbi is the most probable link of every target word of ex.
func (m *Model) viterbi(ex data.Example, s *scratch) []align.Link {
	links := make([]align.Link, 0, len(ex.Tgt))
	for i := 1; i <= len(ex.Tgt); i++ {
		m.shares(ex, nil, i, false, s)
		best := 0
		for j := 1; j < len(s.probs); j++ {
			if s.probs[j] > s.probs[best] {
				best = j
			}
		}
		if best > 0 {
			links = append(links, align.Link{Src: best - 1, Tgt: i - 1})
		}
	}
	return align.Sort(links)
}

// normalize turns the expected counts into the lexical table, row by row on every worker.
func (m *Model) normalize(counts []int64) {
	rows := m.srcSize + 1
	if m.prob == nil {
		m.prob = make([]float64, len(counts))
	}
	data.ParallelFor(context.Background(), rows, m.workers(), func(e int) {
		lo, hi := m.pairs.start[e], m.pairs.start[e+1]
		total := 0.0
		for _, c := range counts[lo:hi] {
			total += float64(c)/countScale + m.opts.Alpha
		}
		if m.opts.Alpha > 0 {
			psiTotal := mathext.Digamma(total)
			for k := lo; k < hi; k++ {
				m.prob[k] = math.Exp(mathext.Digamma(float64(counts[k])/countScale+m.opts.Alpha) - psiTotal)
			}
			return
		}
		if total == 0 {
			total = 1
		}
		for k := lo; k < hi; k++ {
			m.prob[k] = float64(counts[k]) / countScale / total
		}
	})
}

// optimizeTension takes fast_align's eight gradient steps on the tension λ: each adds 20 times the difference
// between the feature's posterior mean per target word (empirical, from the E-step) and its prior mean under the
// current λ, summed over the corpus's sentence lengths, and keeps λ within [0.1, 14].
//
// fast_align departs twice from the gradient of the expected log-likelihood, and both departures are kept here
// because the tension they give is what fast_align's alignments rest on: its E-step measures the posterior's
// feature one target position early, h(i−1, j, m, n) (Feature(j, i, m, n) with a 0-based j), and its prior mean
// divides the feature sum by Z with the lengths swapped (swappedZ). Together they hold λ near 7 (forward) and 10
// (reverse) on Multi30k plus the Hansards, where the exact gradient drives it to the bound 14 and costs
// grow-diag-final-and 0.008 AER on the Hansards gold (0.251 against 0.244; forward 0.258 against 0.261).
func optimizeTension(lambda, empirical float64, sizes []lengthCount, targetWords int) float64 {
	for range tensionSteps {
		model := 0.0
		for _, s := range sizes {
			sum := 0.0
			for i := 1; i <= s.m; i++ {
				sum += featureSum(i, s.m, s.n, lambda) / swappedZ(i, s.m, s.n, lambda)
			}
			model += float64(s.count) * sum
		}
		model /= float64(targetWords)
		lambda = min(max(lambda+(empirical-model)*tensionRate, minTension), maxTension)
	}
	return lambda
}

// lengthCount is how many sentence pairs have m target and n source words.
type lengthCount struct{ m, n, count int }

func sortedLengths(lengths map[[2]int]int) []lengthCount {
	out := make([]lengthCount, 0, len(lengths))
	for k, c := range lengths {
		out = append(out, lengthCount{m: k[0], n: k[1], count: c})
	}
	slices.SortFunc(out, func(a, b lengthCount) int {
		if c := cmp.Compare(a.m, b.m); c != 0 {
			return c
		}
		return cmp.Compare(a.n, b.n)
	})
	return out
}

func (m *Model) workers() int {
	if m.opts.Workers > 0 {
		return m.opts.Workers
	}
	return runtime.GOMAXPROCS(0)
}

// pass runs fn on every example (by its index) on the model's workers, a chunk of pairs at a time, and returns
// the chunks' sums added in chunk order. It reports progress after each chunk and stops early when ctx is
// cancelled.
func (m *Model) pass(ctx context.Context, examples []data.Example, p Progress, fn func(int, *scratch, *chunkSums)) (chunkSums, error) {
	n := len(examples)
	chunks := (n + chunkSize - 1) / chunkSize
	sums := make([]chunkSums, chunks)
	var next atomic.Int64
	done := make(chan int, chunks)
	var wg sync.WaitGroup
	for range min(m.workers(), max(chunks, 1)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var s scratch
			for {
				c := int(next.Add(1)) - 1
				if c >= chunks || ctx.Err() != nil {
					return
				}
				for k := c * chunkSize; k < min((c+1)*chunkSize, n); k++ {
					fn(k, &s, &sums[c])
				}
				done <- min((c+1)*chunkSize, n) - c*chunkSize
			}
		}()
	}
	go func() { wg.Wait(); close(done) }()
	p.Total = n
	for pairs := range done {
		p.Done += pairs
		if m.opts.Progress != nil && p.Done < n { // the caller reports a finished pass itself, with its stats
			m.opts.Progress(p)
		}
	}
	var total chunkSums
	for _, s := range sums {
		total.add(s)
	}
	return total, ctx.Err()
}
