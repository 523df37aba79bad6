package wordalign

import (
	"context"
	"math"
	"sync/atomic"

	"github.com/attend-nmt/attend/align"
	"github.com/attend-nmt/attend/data"
)

// The HMM alignment model (Vogel, Ney and Tillmann 1996) with the empty word as Och and Ney (2003) add it and
// GIZA++ implements it. Target word i of m is emitted by a hidden state: source position j (1…n), which emits
// it with t(f | e_j), or an empty state, which emits it with t(f | empty) and remembers the source position p
// (0…n; 0 is before the first word) the sentence was at, as if the source were doubled with empty words. From
// position p — a source word's state or the empty state that remembers it — the next target word goes to
// source position j with probability
//
//	a(j | p) = (1 − p0) · [(1 − σ) · s(d(j − p)) / Σ_{j'=1…n} s(d(j' − p)) + σ/n],
//
// or stays in the empty state of p with probability p0. The jump distribution s depends on the distance alone,
// bucketed: d(k) is k clamped to [−MaxJump, MaxJump]; σ smooths it towards uniform (GIZA++'s emalsmooth).
// The first target word jumps from position 0. EM re-estimates t and s from the posteriors that
// forward-backward gives; p0 stays fixed, as GIZA++ keeps it.

// jumpSmoothing is σ, the share of a(j | p) spread uniformly over the source positions (GIZA++'s emalsmooth
// default).
const jumpSmoothing = 0.2

// hmmScratch is one worker's buffers for a sentence pair of n source and m target words. A row of w = n+1
// entries per target position is indexed by source position: 0 is the empty word's (emit) or position 0's.
type hmmScratch struct {
	emit      []float64 // m rows: t(f_i | e_j), t(f_i | empty) at j = 0
	at        []int     // m rows: the table index of each pair of emit, −1 for one not in the table
	trans     []float64 // n+1 rows of n: a(j | p) / (1 − p0) at p·n + j−1
	fwd       []float64 // m rows: the scaled forward probability of source position j's state (0 at j = 0)
	empty     []float64 // m rows: the scaled forward probability of the empty state of p
	bwd       []float64 // m rows: the scaled backward probability of position p's states (the same for both)
	scale     []float64 // m: the probability of target word i given the words before it
	back      []int32   // m rows: Viterbi's best previous position of source position j's state
	fromEmpty []bool    // m rows: Viterbi's best state at position p is the empty one
	tmp       []float64 // w
}

// grow sizes every buffer for n source and m target words.
func (h *hmmScratch) grow(n, m int) {
	w := n + 1
	h.emit, h.fwd, h.empty, h.bwd = resize(h.emit, m*w), resize(h.fwd, m*w), resize(h.empty, m*w), resize(h.bwd, m*w)
	h.trans, h.scale, h.tmp = resize(h.trans, w*n), resize(h.scale, m), resize(h.tmp, w)
	h.at = resize(h.at, m*w)
}

// resize returns buf with length n, reallocated when its capacity is short.
func resize[T any](buf []T, n int) []T {
	if cap(buf) < n {
		return make([]T, n)
	}
	return buf[:n]
}

// bucket is the index in m.jump of a jump by k positions.
func (m *Model) bucket(k int) int {
	return min(max(k, -m.opts.MaxJump), m.opts.MaxJump) + m.opts.MaxJump
}

// hmmTables fills h.emit, h.at and h.trans for ex, which has source and target words; cached, when not nil, is
// its table indices (indexCache).
func (m *Model) hmmTables(ex data.Example, cached []int32, h *hmmScratch) {
	n, mm := len(ex.Src), len(ex.Tgt)
	h.grow(n, mm)
	w := n + 1
	for i := range mm {
		for j := range w {
			k, ok := m.lookUp(ex, cached, i, j)
			if ok {
				h.emit[i*w+j], h.at[i*w+j] = m.prob[k], k
			} else {
				h.emit[i*w+j], h.at[i*w+j] = unseenProb, -1
			}
		}
	}
	for p := range w {
		row := h.trans[p*n : (p+1)*n]
		z := 0.0
		for j := 1; j <= n; j++ {
			row[j-1] = m.jump[m.bucket(j-p)]
			z += row[j-1]
		}
		for j := range row {
			row[j] = (1-jumpSmoothing)*row[j]/z + jumpSmoothing/float64(n)
		}
	}
}

// forwardBackward fills h.fwd, h.empty, h.bwd and h.scale for ex from the tables hmmTables filled, and returns
// the log-probability of ex's target words, or −Inf (and no posteriors) when it is 0. The forward probabilities
// of target word i are scaled to sum to 1 and the backward ones divided by the same scales, so that a state's
// posterior is the product of the two.
func (m *Model) forwardBackward(ex data.Example, h *hmmScratch) float64 {
	n, mm, p0 := len(ex.Src), len(ex.Tgt), m.opts.HMMNullProb
	w := n + 1
	logProb := 0.0
	for i := range mm {
		emit, fwd, empty := h.emit[i*w:(i+1)*w], h.fwd[i*w:(i+1)*w], h.empty[i*w:(i+1)*w]
		clear(fwd)
		for p := range w { // the mass at position p after word i−1, spread over the jumps from it
			prev := h.merged(i, p, n)
			empty[p] = p0 * emit[0] * prev
			if prev == 0 {
				continue
			}
			for j, a := range h.trans[p*n : (p+1)*n] {
				fwd[j+1] += prev * a
			}
		}
		c := 0.0
		for j := 1; j <= n; j++ {
			fwd[j] *= (1 - p0) * emit[j]
			c += fwd[j]
		}
		for _, e := range empty {
			c += e
		}
		if !(c > 0) {
			return math.Inf(-1)
		}
		for p := range w {
			fwd[p], empty[p] = fwd[p]/c, empty[p]/c
		}
		h.scale[i] = c
		logProb += math.Log(c)
	}
	last := h.bwd[(mm-1)*w : mm*w]
	for p := range last {
		last[p] = 1
	}
	for i := mm - 1; i > 0; i-- {
		emit, next := h.emit[i*w:(i+1)*w], h.bwd[i*w:(i+1)*w]
		for j := 1; j <= n; j++ {
			h.tmp[j] = (1 - p0) * emit[j] * next[j]
		}
		prev := h.bwd[(i-1)*w : i*w]
		for p := range w {
			sum := 0.0
			for j, a := range h.trans[p*n : (p+1)*n] {
				sum += a * h.tmp[j+1]
			}
			prev[p] = (sum + p0*emit[0]*next[p]) / h.scale[i]
		}
	}
	return logProb
}

// merged is the scaled forward probability of both states of position p after target word i−1 (0-based i):
// before the first word, all of it is at position 0.
func (h *hmmScratch) merged(i, p, n int) float64 {
	if i == 0 {
		if p == 0 {
			return 1
		}
		return 0
	}
	w := n + 1
	return h.fwd[(i-1)*w+p] + h.empty[(i-1)*w+p]
}

// hmmExpect adds one sentence pair's expected link counts to counts (atomically, in fixed point) and its
// expected jumps, log-likelihood and empty-word posteriors to sum.
func (m *Model) hmmExpect(ex data.Example, cached []int32, h *hmmScratch, counts []int64, sum *chunkSums) {
	n, mm, p0 := len(ex.Src), len(ex.Tgt), m.opts.HMMNullProb
	if mm == 0 {
		return
	}
	if n == 0 { // every target word comes from the empty word
		for _, f := range ex.Tgt {
			k, _ := m.pairs.index(m.srcSize, f)
			atomic.AddInt64(&counts[k], countScale)
			sum.logLikelihood += math.Log(m.prob[k])
			sum.null++
		}
		return
	}
	m.hmmTables(ex, cached, h)
	logProb := m.forwardBackward(ex, h)
	if math.IsInf(logProb, -1) {
		return // the pair has probability 0: nothing to learn from it
	}
	sum.logLikelihood += logProb
	if sum.jumps == nil {
		sum.jumps = make([]float64, 2*m.opts.MaxJump+1)
	}
	w := n + 1
	for i := range mm {
		emit, fwd, empty, bwd := h.emit[i*w:(i+1)*w], h.fwd[i*w:(i+1)*w], h.empty[i*w:(i+1)*w], h.bwd[i*w:(i+1)*w]
		null := 0.0
		for p := range w {
			null += empty[p] * bwd[p]
		}
		sum.null += null
		atomic.AddInt64(&counts[h.at[i*w]], int64(null*countScale+0.5))
		for j := 1; j <= n; j++ {
			atomic.AddInt64(&counts[h.at[i*w+j]], int64(fwd[j]*bwd[j]*countScale+0.5))
			h.tmp[j] = (1 - p0) * emit[j] * bwd[j] / h.scale[i]
		}
		for p := range w { // the expected jumps from position p into target word i
			prev := h.merged(i, p, n)
			if prev == 0 {
				continue
			}
			for j, a := range h.trans[p*n : (p+1)*n] {
				sum.jumps[m.bucket(j+1-p)] += prev * a * h.tmp[j+1]
			}
		}
	}
}

// trainHMM runs opts.HMMIterations EM iterations of the HMM from the model's lexical table and a uniform jump
// distribution, looking the pairs of words up in cache when not nil.
func (m *Model) trainHMM(ctx context.Context, examples []data.Example, cache *indexCache, targetWords int) error {
	m.jump = make([]float64, 2*m.opts.MaxJump+1)
	for d := range m.jump {
		m.jump[d] = 1
	}
	counts := make([]int64, m.pairs.size())
	for it := 1; it <= m.opts.HMMIterations; it++ {
		clear(counts)
		p := Progress{HMM: true, Iteration: it, Iterations: m.opts.HMMIterations}
		sums, err := m.pass(ctx, examples, p, func(k int, s *scratch, sum *chunkSums) {
			m.hmmExpect(examples[k], cache.of(k), &s.hmm, counts, sum)
		})
		if err != nil {
			return err
		}
		stats := IterationStats{Tension: m.tension}
		if targetWords > 0 {
			stats.LogLikelihood = sums.logLikelihood / float64(targetWords)
			stats.NullShare = sums.null / float64(targetWords)
		}
		m.normalize(counts)
		total := 0.0
		for _, c := range sums.jumps {
			total += c
		}
		if total > 0 {
			for d, c := range sums.jumps {
				m.jump[d] = c / total
			}
		}
		m.Stats = append(m.Stats, stats)
		if m.opts.Progress != nil {
			p.Done, p.Total, p.Stats = len(examples), len(examples), &stats
			m.opts.Progress(p)
		}
	}
	return nil
}

// hmmViterbi is the most probable state sequence of ex under the HMM, as links: a target word in a source
// position's state is linked to it, one in an empty state to nothing. Ties go to the smaller position, then to
// the source word's state.
func (m *Model) hmmViterbi(ex data.Example, s *scratch) []align.Link {
	n, mm, p0 := len(ex.Src), len(ex.Tgt), m.opts.HMMNullProb
	if n == 0 || mm == 0 {
		return nil
	}
	h := &s.hmm
	m.hmmTables(ex, nil, h)
	w := n + 1
	h.back, h.fromEmpty = resize(h.back, mm*w), resize(h.fromEmpty, mm*w)
	best := h.tmp // the best scaled probability of position p after the previous word, either state
	clear(best)
	best[0] = 1
	for i := range mm {
		emit, fwd, empty := h.emit[i*w:(i+1)*w], h.fwd[i*w:(i+1)*w], h.empty[i*w:(i+1)*w]
		back := h.back[i*w : (i+1)*w]
		clear(fwd)
		for p := range w {
			if best[p] == 0 {
				continue
			}
			for j, a := range h.trans[p*n : (p+1)*n] {
				if v := best[p] * a; v > fwd[j+1] {
					fwd[j+1], back[j+1] = v, int32(p)
				}
			}
		}
		top := 0.0
		for p := range w {
			fwd[p] *= (1 - p0) * emit[p]
			empty[p] = p0 * emit[0] * best[p]
			top = max(top, fwd[p], empty[p])
		}
		if !(top > 0) {
			return nil
		}
		fromEmpty := h.fromEmpty[i*w : (i+1)*w]
		for p := range w {
			fromEmpty[p] = p == 0 || empty[p] > fwd[p]
			best[p] = max(fwd[p], empty[p]) / top
		}
	}
	pos := 0
	for p := range w {
		if best[p] > best[pos] {
			pos = p
		}
	}
	links := make([]align.Link, 0, mm)
	for i := mm - 1; i >= 0; i-- {
		if h.fromEmpty[i*w+pos] {
			continue // the empty state of pos came from pos
		}
		links = append(links, align.Link{Src: pos - 1, Tgt: i})
		pos = int(h.back[i*w+pos])
	}
	return align.Sort(links)
}
