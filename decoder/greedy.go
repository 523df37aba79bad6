package decoder

import (
	"fmt"
	"sync"

	"github.com/attend-nmt/attend/kernels"
)

// Hypothesis is one decoded sentence: the target ids without </s>, and for each emitted id (and the final </s>
// when it was produced) the attention weights over the source words.
type Hypothesis struct {
	Tokens    []int
	Attention [][]float32 // len(Tokens) or len(Tokens)+1 rows of srcLen weights
	Finished  bool        // ended with </s> rather than at the length limit
}

// Block is a group of sentences waiting for GreedyQueue, started: one Session of them per member of an
// ensemble (one for a model alone), in the members' order, each with a row per sentence; the source length of
// each row; and the caller's id of each row to decode. Only the first len(IDs) rows are decoded; later rows
// (padding) are skipped.
type Block[T kernels.Float] struct {
	Sessions []Session[T]
	// SrcLen is the sessions' padded source length: the length of each row of Step's weights of a Session that
	// is not a Joiner (a Joiner says its own).
	SrcLen  int
	Lengths []int
	IDs     []int
	// Shortlist, optional, restricts each row to its own candidate words. Every block of a search has one, all
	// with the same Output, or none has.
	Shortlist *Shortlist[T]
}

// GreedyOptions are GreedyQueue's settings: the most rows of its batch, the goroutines that share each step,
// the products of the output layer, the size of the target vocabulary, <s> and </s>, the most words of a
// sentence, and Stop, which stops the search before its next step with ErrStopped when it is closed (nil
// never is).
type GreedyOptions struct {
	Rows, Threads           int
	Products                kernels.Products
	Vocab, BOS, EOS, MaxLen int
	Stop                    <-chan struct{}
}

// GreedyQueue decodes greedily every sentence of the blocks that next returns (nil when there are no more): it
// takes the most likely word at every step (the lowest id on ties), from BOS until the sentence has produced EOS
// or MaxLen words. Several members rank words by the mean of their log-probabilities (MeanLogProbs: the plain
// mean, as OpenNMT-py's ensembles take, so that an ensemble of one model chooses as the model), each member
// stepping its own Session of the batch. A hypothesis keeps its words without eos, one row of the first member's
// attention (cut to its source length) per word and for the final eos, and whether it ended with eos. done
// receives each hypothesis with its block's id, in the order the sentences end. next is called from
// GreedyQueue's goroutine, when the sentences of the previous block have all entered the batch, so it can encode
// lazily.
//
// Ended sentences leave the batch (Reorder), so later steps cost only the sentences still being decoded. When
// every member's Session is a Joiner, the batch is a running one of at most Rows rows, kept full: when
// sentences end, their rows are refilled at once with the next sentences of the queue, which Join the batch.
// (The first block, which the batch starts from, enters whole.) Otherwise the blocks are decoded one at a time.
// Sentences of different source lengths share the running batch padded to the longest of them: the padded
// source length grows as longer sentences enter and shrinks as they leave (fitter), so a queue sorted by source
// length (as data.MakeBatches sorts) keeps the padding small. A sentence's words do not depend on the batch it
// is decoded in, up to the summation order of the matrix products.
//
// A block without sentences (no IDs) from next means that none is waiting yet, not that the queue has ended:
// the rows in the batch take their step and next is asked again at the next step that has a free row; when the
// batch is empty, GreedyQueue returns. A server feeds sentences that arrive while others are being decoded
// this way, each entering the batch at the first free row.
//
// Threads goroutines share each step: each advances its share of the rows of the members whose rows can be
// advanced apart (advancer; a member without steps whole, on a goroutine of its own where there are several
// members), then each computes its share of the vocabulary's logits (or of the shortlist's words) for all the
// rows, so that the output layer's weights, the largest matrix, are read once per step for the whole batch,
// then each picks the best word of its share of the rows. (Matrix products should then run single-threaded.)
// After the first steps, a step allocates nothing: the words and attention of each row are kept in buffers
// that are reused, and copied out once per sentence.
//
// The output layer is chosen once, when the first block enters: a model alone whose Session lets the search
// compute its output layer (advancer) scores only each sentence's candidate words with a shortlist (in
// float32), or, on bfloat16 Products (not Products.Float32), the vocabulary in bfloat16, the words near the
// best rescored exactly (bf16Output); otherwise each member's float32 output layer scores the vocabulary.
func GreedyQueue[T kernels.Float](next func() *Block[T], done func(id int, h Hypothesis), o GreedyOptions) error {
	return greedyQueue(next, done, o, func(d *Decoder[T]) *bf16Output { return d.bf16For(o.Products) })
}

// greedyQueue is GreedyQueue with the output layer in bfloat16 that bf16 gives for a decoder alone (nil: its own).
func greedyQueue[T kernels.Float](next func() *Block[T], done func(id int, h Hypothesis), o GreedyOptions, bf16 func(*Decoder[T]) *bf16Output) error {
	if o.MaxLen < 1 {
		for b := next(); b != nil && len(b.IDs) > 0; b = next() {
			for _, id := range b.IDs {
				done(id, Hypothesis{})
			}
		}
		return nil
	}
	g := &greedySearch[T]{o: o, next: next, bf16: bf16, parts: make([]greedyPart[T], max(1, o.Threads)),
		wake: make(chan int), idle: make(chan struct{})}
	var helpers sync.WaitGroup
	for p := 1; p < len(g.parts); p++ {
		helpers.Add(1)
		go func() {
			defer helpers.Done()
			for phase := range g.wake {
				g.run(p, phase)
				g.idle <- struct{}{}
			}
		}()
	}
	// The helpers have exited when GreedyQueue returns: none outlives the search.
	defer helpers.Wait()
	defer close(g.wake)
	for {
		g.fill()
		if g.n == 0 {
			return nil
		}
		if stopped(o.Stop) {
			return ErrStopped
		}
		g.step()
		n, eos, first := g.n, o.EOS, &g.members[0] // whose attention the hypotheses keep
		for k := range n {
			row := &g.slots[k]
			best := g.best[k]
			for _, w := range first.weights[k*first.width : k*first.width+row.length] {
				row.attn = append(row.attn, float32(w))
			}
			row.steps++
			if best != eos {
				row.tokens = append(row.tokens, best)
				g.prev[k] = best
			}
			g.dead[k] = best == eos || row.steps >= o.MaxLen
			if g.dead[k] {
				done(row.id, row.hypothesis(best == eos))
			}
		}
		// The ended rows' words leave the shortlist only now: removing one moves another word's slot, which
		// the logits of the rows after it were laid out by.
		for k := 0; g.short != nil && k < n; k++ {
			if g.dead[k] {
				g.short.remove(g.slots[k].cands)
			}
		}
		g.leave()
	}
}

// Phases of a step for greedySearch.run.
const (
	phaseAdvance = iota // the members' steps up to the output layer, each part a share of the rows
	phaseOutput         // logits of a share of the vocabulary
	phaseSelect         // the best word of a share of the rows
)

// greedySearch is the batch of GreedyQueue: rows 0 … n-1 of every member's Session are being decoded.
type greedySearch[T kernels.Float] struct {
	o       GreedyOptions
	next    func() *Block[T]
	bf16    func(*Decoder[T]) *bf16Output
	members []greedyMember[T] // in the ensemble's order
	joins   bool              // every member's Session is a Joiner: the batch is a running one
	n       int               // rows in the batch
	stale   bool              // the batch's rows have all ended, but its Sessions still hold them
	srcLen  int               // the padded source length of the batch's first block: the width of a non-Joiner's weights

	parts []greedyPart[T] // what each goroutine stepping the batch needs beyond the members' Sessions
	best  []int           // the best word of each row at this step
	prev  []int
	from  []int // the old row of each row after the ended rows leave
	slots []greedyRow
	dead  []bool
	short *shortlist[T] // the words the batch scores, nil to score the whole vocabulary
	// fast is the output layer in bfloat16, or nil; with it, amxIn holds the first member's outIn rounded to
	// bf16 and logits32 the bf16 logits, AMXWeights' padded product, ld (its Stride) apart, for fastRows rows.
	fast     *bf16Output
	amxIn    *kernels.AMXInput
	ld       int
	fastRows int
	logits32 []float32
	// The output layer, as chooseOutput decided.
	round  func(from, to int)
	output func(p, parts, n int)
	pick   func(part *greedyPart[T], k int) int
	wake   chan int      // a phase for a helper goroutine
	idle   chan struct{} // a helper's phase is done

	// The block whose sentences enter the batch next, from its row cursor on.
	block   *Block[T]
	cursor  int
	blocks  int  // blocks taken so far
	drained bool // next returned nil
}

// greedyMember is one member's share of greedySearch: its Session of the batch's rows (and what else it is),
// the width of its attention weights this step, and its logits (rows, Vocab), or (rows, len(short.ids)) with a
// shortlist, and weights of the step, and its output layer's input when the search computes its output layer.
type greedyMember[T kernels.Float] struct {
	ses                    Session[T]
	join                   Joiner[T]
	adv                    advancer[T]
	width                  int
	logits, weights, outIn []T
}

// greedyPart is one goroutine's scratch for ranking an ensemble's words by their mean log-probability: the
// mean, the exps of a member's logits, and each member's logits of the row; empty for one model.
type greedyPart[T kernels.Float] struct {
	mean   []float64
	exps   []T
	logits [][]T
}

// greedyRow is what greedy search keeps of the sentence in one row: its id, source length, steps taken, the
// words so far and the attention of every step, one row of its source length each; the buffers are reused by
// the row's next sentences.
type greedyRow struct {
	id, length, steps int
	tokens            []int
	attn              []float32
	cands             []int // the target ids the sentence may use, with a shortlist
}

// hypothesis copies out the row's sentence.
func (r *greedyRow) hypothesis(finished bool) Hypothesis {
	h := Hypothesis{Tokens: append([]int(nil), r.tokens...), Finished: finished, Attention: make([][]float32, r.steps)}
	attn := append(make([]float32, 0, len(r.attn)), r.attn...)
	for i := range h.Attention {
		h.Attention[i] = attn[i*r.length : (i+1)*r.length : (i+1)*r.length]
	}
	return h
}

// fill puts the next sentences of the queue into the batch while it has free rows: the first block, and each
// block when the batch is not a running one, becomes the batch, all its sentences; a running batch's free rows
// join the next sentences of the block.
func (g *greedySearch[T]) fill() {
	for (g.n < g.o.Rows || g.n == 0) && (g.n == 0 || g.joins) {
		if g.block == nil || g.cursor == len(g.block.IDs) {
			if g.drained {
				return
			}
			if g.block = g.next(); g.block == nil {
				g.drained = true
				return
			}
			if len(g.block.IDs) == 0 { // none waiting yet: ask again at the next step
				g.block = nil
				return
			}
			g.useBlock(g.block)
			g.cursor = 0
		}
		b, from, c := g.block, g.n, g.cursor // the batch's rows from … take the block's rows c …
		if g.n == 0 && (g.members[0].ses == nil || !g.joins) {
			g.adopt(b)
		} else {
			g.join(b)
		}
		g.grow(g.n)
		for k := from; k < g.n; k, c = k+1, c+1 {
			s := &g.slots[k]
			if b.Shortlist != nil {
				s.cands = append(s.cands[:0], b.Shortlist.Candidates[c]...)
				g.short.add(s.cands)
			}
			g.prev[k] = g.o.BOS
			s.id, s.length, s.steps, s.tokens, s.attn = b.IDs[c], b.Lengths[c], 0, s.tokens[:0], s.attn[:0]
		}
	}
}

// join appends to the running batch as many of block's sentences, from the cursor on, as it has free rows.
func (g *greedySearch[T]) join(block *Block[T]) {
	rows := g.from[:min(g.o.Rows-g.n, len(block.IDs)-g.cursor)] // (from is leave's: free now)
	for i := range rows {
		rows[i] = g.cursor + i
	}
	if g.stale {
		for _, m := range g.members {
			m.ses.Reorder(nil)
		}
		g.stale = false
	}
	for i, m := range g.members {
		m.join.Join(block.Sessions[i], rows)
	}
	g.cursor += len(rows)
	g.n += len(rows)
}

// adopt makes block's Sessions the batch, its first len(IDs) rows.
func (g *greedySearch[T]) adopt(block *Block[T]) {
	g.joins, g.stale, g.srcLen = true, false, block.SrcLen
	for i := range g.members {
		m := &g.members[i]
		m.ses = block.Sessions[i]
		m.join, _ = m.ses.(Joiner[T])
		m.adv, _ = m.ses.(advancer[T])
		g.joins = g.joins && m.join != nil
	}
	if n := len(block.IDs); n < len(block.Lengths) {
		from := make([]int, n)
		for r := range from {
			from[r] = r
		}
		for _, m := range g.members {
			m.ses.Reorder(from)
		}
	}
	g.n, g.cursor = len(block.IDs), len(block.IDs)
}

// useBlock checks block, the next block of the queue: its Sessions, one per member, and its candidates, which
// it must have exactly when the blocks before it had; with the first block it sets up the members and chooses
// the output layer.
func (g *greedySearch[T]) useBlock(block *Block[T]) {
	if g.blocks == 0 {
		g.members = make([]greedyMember[T], len(block.Sessions))
		for i, ses := range block.Sessions {
			if adv, ok := ses.(advancer[T]); ok && adv.decoder().Cfg.Vocab != g.o.Vocab {
				panic(fmt.Sprintf("decoder: GreedyQueue over %d words got member %d of a target vocabulary of %d words", g.o.Vocab, i+1, adv.decoder().Cfg.Vocab))
			}
		}
		if v := g.o.Vocab; len(g.members) > 1 {
			for p := range g.parts {
				g.parts[p] = greedyPart[T]{mean: make([]float64, v), exps: make([]T, v), logits: make([][]T, len(g.members))}
			}
		}
	}
	if len(block.Sessions) != len(g.members) {
		panic(fmt.Sprintf("decoder: GreedyQueue got a block of %d sessions for %d members", len(block.Sessions), len(g.members)))
	}
	sl := block.Shortlist
	adv, _ := block.Sessions[0].(advancer[T])
	if sl != nil {
		if len(g.members) > 1 || adv == nil {
			panic(fmt.Sprintf("decoder: GreedyQueue got a block with a shortlist for %d models, or a model whose output layer it cannot compute", len(g.members)))
		}
		sl.check(len(block.IDs), g.o.Vocab)
	}
	switch {
	case g.blocks > 0 && (sl != nil) != (g.short != nil):
		panic("decoder: GreedyQueue got blocks with and without a shortlist")
	case sl != nil && g.short != nil && sl.Output != g.short.rows:
		panic("decoder: GreedyQueue got blocks whose shortlists have different OutputRows")
	case sl != nil && g.short == nil:
		g.short = newShortlist(sl.Output, g.o.Vocab, adv.decoder().OutIn())
	}
	if g.blocks++; g.blocks == 1 {
		if adv != nil && len(g.members) == 1 && g.short == nil {
			g.fast = g.bf16(adv.decoder())
		}
		g.chooseOutput()
	}
}

// grow makes room for n rows in the search's buffers.
func (g *greedySearch[T]) grow(n int) {
	if n <= len(g.prev) {
		return
	}
	c := max(n, g.o.Rows)
	g.prev, g.best, g.from, g.dead = make([]int, c), make([]int, c), make([]int, c), make([]bool, c)
	g.slots = append(g.slots, make([]greedyRow, c-len(g.slots))...)
}

// leave drops the ended rows from the batch, filling each hole with the last row, so that most rows keep their
// place, and every member's Session follows (Reorder).
func (g *greedySearch[T]) leave() {
	n := g.n
	for k := range n {
		g.from[k] = k
	}
	for k := 0; k < n; {
		if !g.dead[k] {
			k++
			continue
		}
		n--
		if k != n {
			g.from[k], g.prev[k], g.dead[k] = g.from[n], g.prev[n], g.dead[n]
			g.slots[k], g.slots[n] = g.slots[n], g.slots[k]
		}
	}
	switch {
	case n == g.n:
	case n == 0:
		g.stale = true // Reordered when rows join (a new block may replace the Sessions instead)
	default:
		for _, m := range g.members {
			m.ses.Reorder(g.from[:n])
		}
	}
	g.n = n
}

// step advances the batch's rows by one word, on every part, and leaves each row's best word in g.best.
func (g *greedySearch[T]) step() {
	n, parts := g.n, len(g.parts)
	for i := range g.members {
		m := &g.members[i]
		if f, ok := m.ses.(fitter); ok && g.joins {
			f.fit()
		}
		m.width = g.srcLen
		if m.join != nil {
			m.width = m.join.SrcLen()
		}
		if m.adv != nil {
			m.adv.split(parts)
			m.outIn = m.adv.outIn(n)
		}
		rows := max(n, g.o.Rows)
		if len(m.weights) < n*m.width {
			m.weights = make([]T, rows*max(m.width, g.srcLen))
		}
		if (g.fast == nil || i > 0) && len(m.logits) < n*g.o.Vocab {
			m.logits = make([]T, rows*g.o.Vocab)
		}
	}
	if g.fast != nil && n > g.fastRows {
		g.fastRows = max(n, g.o.Rows)
		g.amxIn = kernels.NewAMXInput(g.fastRows, g.fast.k)
		g.logits32 = make([]float32, g.fast.amx.OutputLen(g.fastRows))
	}
	for _, phase := range []int{phaseAdvance, phaseOutput, phaseSelect} {
		for p := 1; p < parts; p++ {
			g.wake <- phase
		}
		g.run(0, phase)
		for p := 1; p < parts; p++ {
			<-g.idle
		}
	}
}

// run does part p's share of a phase of the step, for every member: GreedyQueue's goroutine does part 0,
// helper p part p.
func (g *greedySearch[T]) run(p, phase int) {
	n, parts := g.n, len(g.parts)
	from, to := n*p/parts, n*(p+1)/parts
	switch phase {
	case phaseAdvance:
		for i := range g.members {
			m := &g.members[i]
			switch w := m.weights[:n*m.width]; {
			case m.adv != nil:
				m.adv.advance(g.prev[:n], w, p, parts)
			case i%parts == p:
				m.ses.Step(g.prev[:n], m.logits[:n*g.o.Vocab], w)
			}
		}
		if g.round != nil && from < to {
			g.round(from, to)
		}
	case phaseOutput:
		g.output(p, parts, n)
	case phaseSelect:
		part := &g.parts[p]
		for k := from; k < to; k++ {
			g.best[k] = g.pick(part, k)
		}
	}
}

// chooseOutput decides, once, when the first block enters (its shortlist, if any, made), how the search
// computes the output layer: round readies a share of the rows' inputs for it (nil: nothing to ready), output
// computes part p of parts of the logits of the batch's n rows, and pick returns row k's best word.
func (g *greedySearch[T]) chooseOutput() {
	first := &g.members[0]
	v := g.o.Vocab
	switch sl, fast := g.short, g.fast; {
	case sl != nil: // the shortlist's words, in float32
		g.output = func(p, parts, n int) {
			m := len(sl.ids)
			sl.output(n, first.outIn, first.logits[:n*m], m*p/parts, m*(p+1)/parts)
		}
		g.pick = func(_ *greedyPart[T], k int) int {
			m := len(sl.ids)
			return sl.argmax(first.logits[k*m:(k+1)*m], g.slots[k].cands)
		}
	case fast != nil: // bfloat16 products, the near-best words rescored
		oi := fast.k
		g.round = func(from, to int) { g.amxIn.Round(any(first.outIn).([]float32), oi, from, to) }
		g.output = func(p, parts, n int) {
			strips := fast.amx.Strips()
			first, last := strips*p/parts, strips*(p+1)/parts
			if err := fast.amx.Mul(g.amxIn, n, g.logits32, first, last); err != nil {
				panic(err) // the shapes were made to fit
			}
			from, to := fast.amx.Columns(first, last)
			kernels.AddBiasStrided(g.logits32[from:], n, g.ld, fast.bias[from:to])
		}
		g.ld = fast.amx.Stride()
		g.pick = func(_ *greedyPart[T], k int) int {
			word, _ := fast.best(any(first.outIn[k*oi:(k+1)*oi]).([]float32), g.logits32[k*g.ld:k*g.ld+v])
			return word
		}
	default: // the members' own float32 output layers
		g.output = func(p, parts, n int) {
			for _, m := range g.members {
				if m.adv != nil {
					m.adv.decoder().output(n, m.outIn, m.logits[:n*v], v*p/parts, v*(p+1)/parts)
				}
			}
		}
		g.pick = func(_ *greedyPart[T], k int) int { return kernels.Argmax(first.logits[k*v : (k+1)*v]) }
		if len(g.members) > 1 {
			g.pick = func(part *greedyPart[T], k int) int {
				for i, m := range g.members {
					part.logits[i] = m.logits[k*v : (k+1)*v]
				}
				MeanLogProbs(part.mean, part.logits, part.exps)
				return kernels.Argmax(part.mean)
			}
		}
	}
}
