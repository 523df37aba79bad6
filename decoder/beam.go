package decoder

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/attend-nmt/attend/internal/bound"
	"github.com/attend-nmt/attend/kernels"
)

// BeamOptions are the settings of Beam.
type BeamOptions struct {
	Width int // K, hypotheses kept per sentence at every step (at least 1; 1 is greedy search)
	NBest int // hypotheses returned per sentence, best first: 1 to Width (0: 1)
	// MaxLen is the most words a hypothesis may have (at least 1). With MaxLenRatio > 0 a sentence of n source
	// words stops at min(MaxLen, max(1, ⌈MaxLenRatio·n⌉)) words instead.
	MaxLen      int
	MaxLenRatio float64
	Alpha       float64 // GNMT length penalty exponent (0: rank by plain log-probability)
	Beta        float64 // GNMT coverage penalty weight (0: none)
	// Stop, when closed (a context's Done), stops the search before its next step (or the choice of the step's
	// words): Beam then returns ErrStopped and no hypotheses. A wide beam's steps are long, and a batch's search
	// may take many of them; nil never stops it.
	Stop <-chan struct{}
}

// ErrStopped is the error of a beam search stopped by BeamOptions.Stop.
var ErrStopped = errors.New("decoder: beam search stopped")

// Stopped reports whether o.Stop is closed: a search checks it before every step.
func (o BeamOptions) Stopped() bool { return stopped(o.Stop) }

// stopped reports whether stop is closed (nil never is), without waiting.
func stopped(stop <-chan struct{}) bool {
	select {
	case <-stop:
		return true
	default:
		return false
	}
}

// Validate reports a setting out of range.
func (o BeamOptions) Validate() error {
	switch {
	case o.Width < 1:
		return fmt.Errorf("decoder: beam width %d; want at least 1", o.Width)
	case o.NBest < 0 || o.NBest > o.Width:
		return fmt.Errorf("decoder: n-best %d; want 1 to the beam width %d", o.NBest, o.Width)
	case o.MaxLen < 1:
		return fmt.Errorf("decoder: max length %d; want at least 1", o.MaxLen)
	}
	for _, c := range []struct {
		what string
		r    bound.Range
		x    float64
	}{{"max length ratio", LengthRatioRange(), o.MaxLenRatio}, {"length penalty alpha", AlphaRange(), o.Alpha}, {"coverage penalty beta", BetaRange(), o.Beta}} {
		if err := c.r.Check(c.what, c.x); err != nil {
			return fmt.Errorf("decoder: %w", err)
		}
	}
	return nil
}

// limit is the most words a sentence of srcLen source words may get.
func (o BeamOptions) limit(srcLen int) int {
	if o.MaxLenRatio <= 0 {
		return o.MaxLen
	}
	// Compared as floats, so that a product past the int range (a ratio of 1e19, were one let through) saturates
	// at MaxLen instead of converting to an arbitrary int.
	if n := math.Ceil(o.MaxLenRatio * float64(srcLen)); n < float64(o.MaxLen) {
		return max(1, int(n))
	}
	return o.MaxLen
}

// Scored is a hypothesis of Beam with its scores.
type Scored struct {
	Hypothesis
	LogProb float64 // Σ log p of the emitted words and of the final </s> when Finished
	// Score ranks the n-best list: LogProb / LengthPenalty(len(Tokens)+1 if Finished else len(Tokens), α) plus
	// CoveragePenalty(Attention, β).
	Score float64
	// Bound is how far LogProb may be from the log-probability that exact logits give, with the output layer
	// in bfloat16 (Output.Products): the sum of its steps' bounds (bf16Search); Score's is Bound divided by the
	// length penalty. 0 with the model's own products.
	Bound float64
}

// beamNode is one word of a hypothesis in the search's tree: its parent node (-1 for the root), the word and
// the attention it was produced with. A hypothesis is read by walking up from its last node.
type beamNode struct {
	parent int
	token  int
	attn   []float32
}

// candidate is one extension of a live hypothesis: row's hypothesis followed by token, with its total
// log-probability.
type candidate struct {
	logProb    float64
	row, token int
}

// beamState is the search state of beam search in the running batch (BeamQueue) beyond the model's and the
// batch's: each row's hypothesis (its score and last node in its sentence's tree), each sentence's settings, tree
// of words and finished hypotheses, and the next step's rows as choose fills them.
type beamState[T kernels.Float] struct {
	k, eos  int
	weights []T // the step's attention weights, srcLen per row: the first member's
	srcLen  int

	score []float64 // log-probability of each row's hypothesis; -Inf for an unused row
	node  []int     // each row's last node in its sentence's tree
	sents []beamSent
	// The next step's rows, as choose fills them (with the batch's from and prev: row r continues old row
	// from[r] with word prev[r]), moved with their sentences when others leave.
	nextNode  []int
	nextScore []float64

	// fast is the search's output layer in bfloat16 (Output.Products), or nil. bound is the bound of each
	// row's log-probability (Scored.Bound), stepBound that of the step's words' log-probabilities of each row,
	// nextBound the next step's rows' bound; all 0 without fast.
	fast                        *bf16Search
	bound, stepBound, nextBound []float64

	// The step's logits: each member's, width per row, ld apart (bf16Search's stride, or width).
	logits    [][]T
	width, ld int
	parts     []beamScratch[T] // each goroutine's that chooses the words of a share of the sentences
}

// beamScratch is one goroutine's scratch for choosing sentences' words, reused at every step.
type beamScratch[T kernels.Float] struct {
	cands           []candidate
	exps, rowLogits [][]T     // k rows: exps of a row's logits; a row's logits of its own candidates, with a shortlist
	liveLogits      [][]T     // the logits of a sentence's live rows
	liveRows        []int     // their rows
	lse             []float64 // their log-sum-exps
	mean            []float64 // a row's mean log-probabilities, for an ensemble (MeanLogProbs); nil for one model
	memberRows      [][]T     // each member's logits of a row, for an ensemble
	scores          []float64 // a sentence's finished Scores, for settled
}

// beamSent is what beam search keeps of one sentence of the batch beyond greedyRow: its settings, the tree of
// its words (each hypothesis is read by walking up from its last node) and its finished hypotheses.
type beamSent struct {
	opts     *BeamOptions
	nodes    []beamNode
	finished []Scored
}

// newBeamState starts a search of k rows per sentence over a vocabulary of v words, with members models, that
// ranks words by the mean log-probability of the members' logits when mean is set, by one model's logits when
// not, its words chosen by parts goroutines.
func newBeamState[T kernels.Float](v, k, eos, members int, mean bool, parts int) *beamState[T] {
	b := &beamState[T]{k: k, eos: eos, logits: make([][]T, members), parts: make([]beamScratch[T], parts)}
	for p := range b.parts {
		sc := beamScratch[T]{cands: make([]candidate, 0, 2*k), exps: make([][]T, k), rowLogits: make([][]T, k),
			liveLogits: make([][]T, 0, k), liveRows: make([]int, 0, k), lse: make([]float64, k)}
		for i := range k {
			sc.exps[i], sc.rowLogits[i] = make([]T, v), make([]T, v)
		}
		if mean {
			sc.mean, sc.memberRows = make([]float64, v), make([][]T, members)
		}
		b.parts[p] = sc
	}
	return b
}

// grow makes room for c rows (and sentences), the batch being empty.
func (b *beamState[T]) grow(c int) {
	b.score, b.node, b.nextNode, b.nextScore = make([]float64, c), make([]int, c), make([]int, c), make([]float64, c)
	b.bound, b.stepBound, b.nextBound = make([]float64, c), make([]float64, c), make([]float64, c)
	b.sents = append(b.sents, make([]beamSent, c-len(b.sents))...)
}

// enter starts sentence u of the batch, of settings opts, with one live hypothesis (its other k-1 rows unused:
// at the start the k beams are one and the same, keep one).
func (b *beamState[T]) enter(u int, opts *BeamOptions) {
	for r := u * b.k; r < (u+1)*b.k; r++ {
		b.score[r], b.node[r], b.bound[r] = math.Inf(-1), -1, 0
	}
	b.score[u*b.k] = 0
	s := &b.sents[u]
	s.opts, s.nodes, s.finished = opts, s.nodes[:0], nil
}

// move makes sentence src of the batch, its next step's rows included, sentence dst (leave's hole filling).
func (b *beamState[T]) move(dst, src int) {
	d, s := dst*b.k, src*b.k
	copy(b.nextNode[d:d+b.k], b.nextNode[s:s+b.k])
	copy(b.nextScore[d:d+b.k], b.nextScore[s:s+b.k])
	copy(b.nextBound[d:d+b.k], b.nextBound[s:s+b.k])
	b.sents[dst], b.sents[src] = b.sents[src], b.sents[dst]
}

// prepare readies the choice of the step's words of the batch g, once its buffers are those of the step.
func (b *beamState[T]) prepare(g *greedySearch[T]) {
	first := &g.members[0]
	b.weights, b.srcLen = first.weights, first.width // the hypotheses keep the first member's attention
	b.width = g.o.Vocab
	if g.short != nil {
		b.width = len(g.short.ids)
	}
	b.ld = b.width
	for i, m := range g.members {
		b.logits[i] = m.logits
	}
	if b.fast = g.fast; b.fast != nil { // the logits are bf16Search's
		b.logits[0], b.ld = any(b.fast.c).([]T), b.fast.o.amx.Stride()
	}
}

// chooseAll ranks and chooses the extensions of part p of parts of the sentences of the batch g (candidates,
// then choose) from the step's logits, and marks in g.dead the sentences that are done.
func (b *beamState[T]) chooseAll(g *greedySearch[T], p, parts int) {
	units := g.n / b.k
	sc := &b.parts[p]
	for u := units * p / parts; u < units*(p+1)/parts; u++ {
		s := &g.slots[u]
		s.steps++
		cands := b.candidates(u, g.short, s.cands, sc)
		g.dead[u] = !b.choose(u, s, cands, g.from, g.prev, sc)
	}
}

// finish hands the n-best list of each sentence of the batch g that is done to g.done.
func (b *beamState[T]) finish(g *greedySearch[T]) {
	for u := range g.n / b.k {
		if g.dead[u] {
			g.done(g.slots[u].id, b.best(u))
		}
	}
}

// candidates returns the 2k best extensions of sentence j's live hypotheses, best first (ties: lower row, then
// lower word), on the scratch sc. b.logits are each member's (see prepare): the whole vocabulary, or with a
// shortlist (words, one member) the batch's candidates, of which the sentence may use ids. An ensemble's words
// are ranked by the mean of the members' log-probabilities, one decoder's by its own.
func (b *beamState[T]) candidates(j int, words *shortlist[T], ids []int, sc *beamScratch[T]) []candidate {
	cands, logits, width, ld := sc.cands[:0], b.logits, b.width, b.ld
	if sc.mean != nil {
		for beam := 0; beam < b.k; beam++ {
			row := j*b.k + beam
			if math.IsInf(b.score[row], -1) {
				continue
			}
			for i, l := range logits {
				sc.memberRows[i] = l[row*width : (row+1)*width]
			}
			MeanLogProbs(sc.mean, sc.memberRows, sc.exps[0])
			cands = pushRow(cands, sc.mean, 0, b.score[row], row, nil, 2*b.k)
		}
		sc.cands = cands
		return cands
	}
	// The live rows' logits (of the sentence's own words, with a shortlist), then their log-sum-exps side by
	// side, then their words, row by row.
	rows, live := sc.liveLogits[:0], sc.liveRows[:0]
	for beam := 0; beam < b.k; beam++ {
		row := j*b.k + beam
		if math.IsInf(b.score[row], -1) {
			continue
		}
		rowLogits := logits[0][row*ld : row*ld+width]
		if words != nil {
			own := sc.rowLogits[len(rows)][:len(ids)]
			for i, id := range ids {
				own[i] = rowLogits[int(words.pos[id])]
			}
			rowLogits = own
		}
		rows, live = append(rows, rowLogits), append(live, row)
	}
	kernels.LogSumExps(rows, sc.exps, sc.lse)
	if b.fast != nil {
		for i, row := range live {
			b.stepBound[row] = b.fast.lseBound(row, any(rows[i]).([]float32), sc.lse[i])
		}
	}
	for i, row := range live {
		cands = pushRow(cands, rows[i], sc.lse[i], b.score[row], row, ids, 2*b.k)
	}
	sc.cands, sc.liveLogits, sc.liveRows = cands, rows, live
	return cands
}

// choose takes the best extensions cands of sentence u of the batch, s: those among the best k that end in eos
// finish; the best k that do not become the sentence's rows of the next step (row u·k+i continues old row
// from[u·k+i] with word prev[u·k+i]) — or finish unfinished when this is the sentence's last step. It reports
// whether the sentence goes on: not after its last step, nor once k hypotheses have finished, nor once its n-best
// list can no longer change (settled, on the scratch sc).
func (b *beamState[T]) choose(u int, s *greedyRow, cands []candidate, from, prev []int, sc *beamScratch[T]) bool {
	k, sent := b.k, &b.sents[u]
	last := s.steps >= sent.opts.limit(s.length)
	attnRow := func(row int) []float32 {
		att := make([]float32, s.length)
		for i := range att {
			att[i] = float32(b.weights[row*b.srcLen+i])
		}
		return att
	}
	base := u * k
	kept := 0
	for rank, c := range cands {
		if c.token == b.eos {
			if rank < k {
				sent.nodes = append(sent.nodes, beamNode{parent: b.node[c.row], token: b.eos, attn: attnRow(c.row)})
				sent.finished = append(sent.finished, finish(sent.nodes, len(sent.nodes)-1, c.logProb, b.bound[c.row]+b.stepBound[c.row], true, *sent.opts))
			}
			continue
		}
		if kept == k {
			continue
		}
		sent.nodes = append(sent.nodes, beamNode{parent: b.node[c.row], token: c.token, attn: attnRow(c.row)})
		if last {
			sent.finished = append(sent.finished, finish(sent.nodes, len(sent.nodes)-1, c.logProb, b.bound[c.row]+b.stepBound[c.row], false, *sent.opts))
		}
		from[base+kept], prev[base+kept], b.nextScore[base+kept], b.nextNode[base+kept] = c.row, c.token, c.logProb, len(sent.nodes)-1
		b.nextBound[base+kept] = b.bound[c.row] + b.stepBound[c.row]
		kept++
	}
	if last || len(sent.finished) >= k || settled(sent, s.length, b.nextScore[base:base+kept], sc) {
		return false
	}
	for ; kept < k; kept++ { // fewer live extensions than beams: pad with unused rows
		from[base+kept], prev[base+kept], b.nextScore[base+kept], b.nextNode[base+kept] = base, b.eos, math.Inf(-1), -1
		b.nextBound[base+kept] = 0
	}
	return true
}

// settled reports whether sentence sent's n-best list (its opts.NBest best finished hypotheses) is final although
// it still has live hypotheses, of log-probabilities live, its source length srcLen (sc is scratch): then the
// sentence can stop early, with the n-best list it would have had at the end of its search.
//
// A live hypothesis's log-probability lp only falls as it grows (each word adds a log-probability, at most 0:
// the logit minus a log-sum-exp that includes it), its length penalty lp(Y) ≥ 1 only grows with its length, at
// most limit+1 (its words and </s>), and the coverage penalty is at most 0. So whenever it finishes (or stops at
// the limit) its Score is at most max(lp, lp/LengthPenalty(limit+1, α)). When that bound of every live
// hypothesis is at most the NBest-th best Score among the finished ones, no later hypothesis can enter the list:
// best sorts stably, so one that ties that Score goes after the hypotheses already finished with it.
func settled[T kernels.Float](sent *beamSent, srcLen int, live []float64, sc *beamScratch[T]) bool {
	n, hyps := max(sent.opts.NBest, 1), sent.finished
	if len(hyps) < n {
		return false
	}
	scores := sc.scores[:0]
	for _, h := range hyps {
		scores = append(scores, h.Score)
	}
	sc.scores = scores
	slices.Sort(scores)
	nth := scores[len(scores)-n] // NaN sorts first: never the NBest-th best of a list that has n others
	penalty := LengthPenalty(sent.opts.limit(srcLen)+1, sent.opts.Alpha)
	for _, lp := range live {
		if !(max(lp, lp/penalty) <= nth) { // a NaN bound, or nth NaN, keeps the search going
			return false
		}
	}
	return true
}

// advance makes the chosen rows, the first n, the current ones.
func (b *beamState[T]) advance(n int) {
	copy(b.score, b.nextScore[:n])
	copy(b.node, b.nextNode[:n])
	copy(b.bound, b.nextBound[:n])
}

// best returns sentence u's finished hypotheses sorted by Score, best first, at most its NBest of them, which
// the sentence no longer holds.
func (b *beamState[T]) best(u int) []Scored {
	sent := &b.sents[u]
	hyps := sent.finished
	sent.finished = nil
	slices.SortStableFunc(hyps, func(x, y Scored) int {
		switch {
		case x.Score > y.Score:
			return -1
		case x.Score < y.Score:
			return 1
		}
		return 0
	})
	return hyps[:min(max(sent.opts.NBest, 1), len(hyps))]
}

// finish reads the hypothesis ending at nodes[last] and scores it; bound is its log-probability's (Scored.Bound).
func finish(nodes []beamNode, last int, logProb, bound float64, done bool, opts BeamOptions) Scored {
	var h Hypothesis
	for i := last; i >= 0; i = nodes[i].parent {
		h.Attention = append(h.Attention, nodes[i].attn)
		if !(done && i == last) {
			h.Tokens = append(h.Tokens, nodes[i].token)
		}
	}
	slices.Reverse(h.Attention)
	slices.Reverse(h.Tokens)
	h.Finished = done
	length := len(h.Tokens)
	if done {
		length++
	}
	return Scored{Hypothesis: h, LogProb: logProb, Bound: bound,
		Score: logProb/LengthPenalty(length, opts.Alpha) + CoveragePenalty(h.Attention, opts.Beta)}
}

// pushCandidate inserts c into best, kept sorted by decreasing log-probability and at most size long; a
// candidate equal to one already there goes after it, so earlier (lower row, lower word) wins ties.
func pushCandidate(best []candidate, c candidate, size int) []candidate {
	if len(best) == size && c.logProb <= best[size-1].logProb {
		return best
	}
	if math.IsInf(c.logProb, -1) || math.IsNaN(c.logProb) {
		return best
	}
	i := len(best)
	for i > 0 && best[i-1].logProb < c.logProb {
		i--
	}
	if len(best) < size {
		best = append(best, candidate{})
	}
	copy(best[i+1:], best[i:len(best)-1])
	best[i] = c
	return best
}

// pushRow pushes into best (at most size long, see pushCandidate) the extensions of one row's hypothesis, whose
// log-probability is base, by each word: logits are the row's logits, of word tokens[i] (nil: of word i), and a
// word's log-probability is its logit minus lse, their log-sum-exp (0 for logits that are log-probabilities).
//
// Most words fall short of the list's last entry. They are passed over by a comparison of their logit with a cut:
// a logit c whose log-probability base + (c - lse) is at most the last entry's. That log-probability is a
// monotone function of the logit (float64 sums round monotonically), so every logit at most c falls short too,
// and the words passed over are exactly those the full comparison would pass over.
func pushRow[E kernels.Float](best []candidate, logits []E, lse, base float64, row int, tokens []int, size int) []candidate {
	cut, full := E(0), false // while full, logits ≤ cut fall short of the list
	for i, x := range logits {
		if full && x <= cut {
			continue
		}
		logProb := base + (float64(x) - lse)
		if len(best) == size && logProb <= best[size-1].logProb {
			continue
		}
		token := i
		if tokens != nil {
			token = tokens[i]
		}
		best = pushCandidate(best, candidate{logProb: logProb, row: row, token: token}, size)
		if len(best) == size {
			cut, full = shortCut[E](best[size-1].logProb, lse, base)
		}
	}
	return best
}

// shortCut returns a logit c with base + (c - lse) ≤ last, and whether it found one (never when last is NaN): the
// logit of log-probability last, rounded to E, then stepped down until it holds.
func shortCut[E kernels.Float](last, lse, base float64) (E, bool) {
	c := E(last - base + lse)
	for range 8 {
		if base+(float64(c)-lse) <= last {
			return c, true
		}
		c = nextDown(c)
	}
	return 0, false
}

// nextDown returns the largest E below c.
func nextDown[E kernels.Float](c E) E {
	if f, ok := any(c).(float32); ok {
		return E(math.Nextafter32(f, float32(math.Inf(-1))))
	}
	return E(math.Nextafter(float64(c), math.Inf(-1)))
}

// spread moves the first step's rows of the batch g's sentences, one per sentence (sents of them), to rows
// j·k: each member's logits and the first member's attention weights (the others are not read), and bf16Search's
// rows.
func (b *beamState[T]) spread(g *greedySearch[T], sents int) {
	for i, m := range g.members {
		if i > 0 || b.fast == nil {
			spreadRows(m.logits, b.width, sents, b.k)
		}
	}
	first := &g.members[0]
	spreadRows(first.weights, first.width, sents, b.k)
	if b.fast != nil {
		spreadRows(b.fast.c, b.fast.o.amx.Stride(), sents, b.k)
		b.fast.spread(sents, b.k)
	}
}

// spreadRows moves rows 0 … sents-1 of x, width values each, to rows 0, k, 2k, …: the first step's row of each
// sentence to its first beam's.
func spreadRows[T kernels.Float](x []T, width, sents, k int) {
	for j := sents - 1; j > 0 && k > 1; j-- { // from the last: row j·k ≥ j never holds a row still to move
		copy(x[j*k*width:(j*k+1)*width], x[j*width:(j+1)*width])
	}
}
