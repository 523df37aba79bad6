package decoder

import (
	"cmp"
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

// Block is a group of sentences waiting for GreedyQueue (or BeamQueue), started: one Session of them per member of an
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
	// Beam, optional, is the beam search settings of the block's sentences in BeamQueue, in place of the
	// queue's: of the same Width.
	Beam *BeamOptions
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
// best rescored exactly (bf16Search); otherwise each member's float32 output layer scores the vocabulary.
func GreedyQueue[T kernels.Float](next func() *Block[T], done func(id int, h Hypothesis), o GreedyOptions) error {
	return greedyQueue(next, done, o, func(d *Decoder[T]) *bf16Output { return d.bf16For(o.Products) })
}

// BeamQueue is GreedyQueue with beam search (see Beam) of opts in place of the greedy choice: each sentence takes
// opts.Width rows of the running batch, all of them joined from its one row, and leaves as soon as it is done,
// when its n-best list (up to NBest hypotheses sorted by Score, best first) goes to done; a new sentence joins
// when Width rows are free. A block's Beam, when set, is its sentences' settings in place of opts: it may differ
// from opts in all but Width, which is the rows of every sentence. o.MaxLen is not used (a sentence's limit is
// its settings'). With Products in bfloat16 a model alone's output layer is bf16Search's; a shortlist scores in
// float32. A sentence's hypotheses and scores do not depend on the sentences it shares the batch with, up to the
// summation order of the matrix products.
func BeamQueue[T kernels.Float](next func() *Block[T], done func(id int, list []Scored), o GreedyOptions, opts BeamOptions) error {
	if err := opts.Validate(); err != nil {
		return err
	}
	return queue(next, done, o, &opts, false, func(d *Decoder[T]) *bf16Output { return d.bf16For(o.Products) })
}

// greedyQueue is GreedyQueue with the output layer in bfloat16 that bf16 gives for a decoder alone (nil: its own).
func greedyQueue[T kernels.Float](next func() *Block[T], done func(id int, h Hypothesis), o GreedyOptions, bf16 func(*Decoder[T]) *bf16Output) error {
	return queue(next, func(id int, list []Scored) { done(id, list[0].Hypothesis) }, o, nil, false, bf16)
}

// queue is the running batch of GreedyQueue and BeamQueue: greedy search, or beam search of beam when it is not
// nil (which ranks words by the mean of the members' log-probabilities when mean is set, even for one member),
// with the output layer in bfloat16 that bf16 gives for a decoder alone (nil: its own).
func queue[T kernels.Float](next func() *Block[T], done func(id int, list []Scored), o GreedyOptions, beam *BeamOptions, mean bool, bf16 func(*Decoder[T]) *bf16Output) error {
	if o.MaxLen < 1 && beam == nil {
		for b := next(); b != nil && len(b.IDs) > 0; b = next() {
			for _, id := range b.IDs {
				done(id, []Scored{{}})
			}
		}
		return nil
	}
	g := &greedySearch[T]{o: o, next: next, done: done, bf16: bf16, parts: make([]greedyPart[T], max(1, o.Threads)),
		wake: make(chan int), idle: make(chan struct{}), k: 1, beamOpts: beam, mean: mean}
	if beam != nil {
		g.k = beam.Width
	}
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
	// The helpers have exited when the queue returns: none outlives the search.
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
		if g.beam != nil {
			g.beam.finish(g)
		} else {
			g.chooseGreedy()
		}
		// The ended rows' words leave the shortlist only now: removing one moves another word's slot, which
		// the logits of the rows after it were laid out by. Beam search's leave when sentences join (fill), so
		// that the sentences of a batch that takes no more score the same words to the end, as they always have.
		for u := 0; g.short != nil && u < g.n/g.k; u++ {
			switch {
			case !g.dead[u]:
			case g.beam != nil:
				g.gone = append(g.gone, g.slots[u].cands...)
			default:
				g.short.remove(g.slots[u].cands)
			}
		}
		g.leave()
	}
}

// chooseGreedy takes each row's best word of the step, and hands each ended sentence to done.
func (g *greedySearch[T]) chooseGreedy() {
	n, eos, first := g.n, g.o.EOS, &g.members[0] // whose attention the hypotheses keep
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
		g.dead[k] = best == eos || row.steps >= g.o.MaxLen
		if g.dead[k] {
			g.done(row.id, []Scored{{Hypothesis: row.hypothesis(best == eos)}})
		}
	}
}

// Phases of a step for greedySearch.run.
const (
	phaseAdvance = iota // the members' steps up to the output layer, each part a share of the rows
	phaseOutput         // logits of a share of the vocabulary
	phaseRescore        // bf16Search's rescoring of a share of the rows
	phaseSelect         // the best word of a share of the rows
)

// greedySearch is the batch of GreedyQueue and BeamQueue: rows 0 … n-1 of every member's Session are being
// decoded, k rows per sentence (1 for greedy search): sentence u in rows u·k … u·k+k-1.
type greedySearch[T kernels.Float] struct {
	o    GreedyOptions
	next func() *Block[T]
	done func(id int, list []Scored)
	k    int
	// beamOpts, for beam search, are the settings of a block without its own, beam its search state (nil for
	// greedy search); mean ranks beam search's words by the mean of the members' log-probabilities.
	beamOpts *BeamOptions
	beam     *beamState[T]
	mean     bool
	bf16     func(*Decoder[T]) *bf16Output
	members  []greedyMember[T] // in the ensemble's order
	joins    bool              // every member's Session is a Joiner: the batch is a running one
	n        int               // rows in the batch
	rows     int               // the rows of this step: n, or n/k while spread
	// spread is set while the sentences of the first block of a beam search have one row each (in the
	// Sessions), which its first step spreads to their k rows, as a beam search of a batch always has: row j's
	// logits to row j·k (the other rows unused).
	spread bool
	joined bool // sentences have joined the batch
	stale  bool // the batch's rows have all ended, but its Sessions still hold them
	srcLen int  // the padded source length of the batch's first block: the width of a non-Joiner's weights

	parts []greedyPart[T] // what each goroutine stepping the batch needs beyond the members' Sessions
	best  []int           // the best word of each row at this step
	prev  []int
	from  []int         // the old row of each row after the ended rows leave
	slots []greedyRow   // each sentence's
	dead  []bool        // each sentence's
	short *shortlist[T] // the words the batch scores, nil to score the whole vocabulary
	gone  []int         // beam search's words of ended sentences, still in short until sentences join
	// fast is the output layer in bfloat16 with the words that can matter rescored, or nil.
	fast *bf16Search
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

// greedyRow is what the search keeps of a sentence of the batch: its id, source length, steps taken, and, for
// greedy search, the words so far and the attention of every step, one row of its source length each; the
// buffers are reused by the row's next sentences.
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

// fill puts the next sentences of the queue into the batch while it has free rows (k for each): the first
// block, and each block when the batch is not a running one, becomes the batch, all its sentences; a running
// batch's free rows join the next sentences of the block.
func (g *greedySearch[T]) fill() {
	for g.n == 0 || g.joins && !g.spread && g.n+g.k <= g.o.Rows {
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
		b, from, c := g.block, g.n/g.k, g.cursor // the batch's sentences from … take the block's rows c …
		if len(g.gone) > 0 {
			g.short.remove(g.gone)
			g.gone = g.gone[:0]
		}
		if g.n == 0 && (g.members[0].ses == nil || !g.joins) {
			g.adopt(b)
		} else {
			g.join(b)
		}
		g.grow(g.n)
		for u := from; u < g.n/g.k; u, c = u+1, c+1 {
			s := &g.slots[u]
			if b.Shortlist != nil {
				s.cands = append(s.cands[:0], b.Shortlist.Candidates[c]...)
				g.short.add(s.cands)
			}
			for r := u * g.k; r < (u+1)*g.k; r++ {
				g.prev[r] = g.o.BOS
			}
			s.id, s.length, s.steps, s.tokens, s.attn = b.IDs[c], b.Lengths[c], 0, s.tokens[:0], s.attn[:0]
			if g.beam != nil {
				g.beam.enter(u, cmp.Or(b.Beam, g.beamOpts))
			}
		}
	}
}

// join appends to the running batch as many of block's sentences, from the cursor on, as it has free rows, k
// rows each.
func (g *greedySearch[T]) join(block *Block[T]) {
	rows := g.from[:min((g.o.Rows-g.n)/g.k, len(block.IDs)-g.cursor)*g.k] // (from is leave's: free now)
	for i := range rows {
		rows[i] = g.cursor + i/g.k
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
	g.cursor += len(rows) / g.k
	g.n += len(rows)
	g.joined = true
}

// adopt makes block's Sessions the batch, its first len(IDs) rows, each to be spread to k rows by the first
// step.
func (g *greedySearch[T]) adopt(block *Block[T]) {
	g.joins, g.stale, g.srcLen = true, false, block.SrcLen
	for i := range g.members {
		m := &g.members[i]
		m.ses = block.Sessions[i]
		m.join, _ = m.ses.(Joiner[T])
		m.adv, _ = m.ses.(advancer[T])
		g.joins = g.joins && m.join != nil
	}
	n := len(block.IDs)
	if n < len(block.Lengths) {
		from := make([]int, n)
		for r := range from {
			from[r] = r
		}
		for _, m := range g.members {
			m.ses.Reorder(from)
		}
	}
	g.n, g.cursor, g.spread = n*g.k, n, g.k > 1
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
	if o := block.Beam; o != nil && (g.beamOpts == nil || o.Width != g.k || o.Validate() != nil) {
		panic(fmt.Sprintf("decoder: a block's beam search settings %+v in a search of %d rows per sentence (%v)", *o, g.k, o.Validate()))
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
		if g.beamOpts != nil {
			g.beam = newBeamState[T](g.o.Vocab, g.k, g.o.EOS, len(g.members), g.mean || len(g.members) > 1, len(g.parts))
		}
		if adv != nil && len(g.members) == 1 && g.short == nil && !g.mean {
			if o := g.bf16(adv.decoder()); o != nil {
				g.fast = newBF16Search(o, g.o.Rows, g.cands(), len(g.parts))
			}
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
	if g.beam != nil {
		g.beam.grow(c)
	}
}

// leave drops the ended sentences' rows from the batch, and every member's Session follows (Reorder). It fills
// each hole with the last sentence's rows, so that most rows keep their place (and their memory, which Reorder
// copies when a row's sentence changes); but a beam search that no sentence has joined keeps its sentences in
// order, as a beam search of a batch always has (a row's products depend on its place in the batch with some
// BLAS kernels: translate's output stays the same). Beam search's rows have chosen the old rows they continue in
// from (choose); greedy search's continue their own.
func (g *greedySearch[T]) leave() {
	n, k := g.n/g.k, g.k
	if g.beam == nil {
		for r := range g.n {
			g.from[r] = r
		}
	}
	stable, kept := g.beam != nil && !g.joined, 0
	for u := 0; u < n; {
		switch {
		case stable && !g.dead[u]:
			g.move(kept, u)
			kept++
			u++
		case stable:
			u++
		case !g.dead[u]:
			u++
		default:
			n--
			g.move(u, n)
		}
	}
	if stable {
		n = kept
	}
	switch rows := n * k; {
	case rows == g.n && g.beam == nil:
	case rows == 0:
		g.stale = true // Reordered when rows join (a new block may replace the Sessions instead)
	default:
		for r := 0; g.spread && r < rows; r++ {
			g.from[r] /= k // the first step's rows were one per sentence
		}
		for _, m := range g.members {
			m.ses.Reorder(g.from[:rows])
		}
	}
	g.n, g.spread = n*k, false
	if g.beam != nil {
		g.beam.advance(g.n)
	}
}

// move makes sentence src of the batch, its rows' next words and old rows, sentence dst (its own place, or that
// of an ended sentence).
func (g *greedySearch[T]) move(dst, src int) {
	if dst == src {
		return
	}
	k := g.k
	copy(g.from[dst*k:(dst+1)*k], g.from[src*k:(src+1)*k])
	copy(g.prev[dst*k:(dst+1)*k], g.prev[src*k:(src+1)*k])
	g.dead[dst] = g.dead[src]
	g.slots[dst], g.slots[src] = g.slots[src], g.slots[dst]
	if g.beam != nil {
		g.beam.move(dst, src)
	}
}

// step advances the batch's rows by one word, on every part, and leaves each row's best word in g.best.
func (g *greedySearch[T]) step() {
	n, parts := g.n, len(g.parts)
	if g.spread {
		n /= g.k
	}
	g.rows = n
	for i := range g.members {
		m := &g.members[i]
		switch f, ok := m.ses.(fitter); {
		case !ok || !g.joins:
		case g.beam == nil:
			f.fit(0)
		case g.joined: // beam search's many rows move when the padding changes: not for a few positions
			f.fit(m.join.SrcLen() / 4)
		}
		m.width = g.srcLen
		if m.join != nil {
			m.width = m.join.SrcLen()
		}
		if m.adv != nil {
			m.adv.split(parts)
			m.outIn = m.adv.outIn(n)
		}
		rows := max(g.n, g.o.Rows) // (the first step's rows spread to g.n)
		if len(m.weights) < g.n*m.width {
			m.weights = make([]T, rows*max(m.width, g.srcLen))
		}
		if (g.fast == nil || i > 0) && len(m.logits) < g.n*g.o.Vocab {
			m.logits = make([]T, rows*g.o.Vocab)
		}
	}
	if f := g.fast; f != nil && g.n > len(f.delta) {
		g.fast = newBF16Search(f.o, g.n, g.cands(), len(g.parts))
	}
	if g.beam != nil {
		g.beam.prepare(g)
	}
	for _, phase := range []int{phaseAdvance, phaseOutput, phaseRescore, phaseSelect} {
		if phase == phaseRescore && g.fast == nil {
			continue
		}
		if phase == phaseSelect && g.spread {
			g.beam.spread(g, n)
		}
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
	n, parts := g.rows, len(g.parts)
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
	case phaseRescore:
		g.fast.rescoreRows(any(g.members[0].outIn).([]float32), from, to, p)
	case phaseSelect:
		if g.beam != nil { // beam search's choice: of a share of the sentences
			g.beam.chooseAll(g, p, parts)
			return
		}
		part := &g.parts[p]
		for k := from; k < to; k++ {
			g.best[k] = g.pick(part, k)
		}
	}
}

// cands is how many words of each row a bf16Search must rescore: the best for greedy search, 2k for beam search.
func (g *greedySearch[T]) cands() int {
	if g.beam == nil {
		return 1
	}
	return 2 * g.k
}

// chooseOutput decides, once, when the first block enters (its shortlist, if any, made), how the search
// computes the output layer: round readies a share of the rows' inputs for it (nil: nothing to ready), output
// computes part p of parts of the logits of the batch's n rows, and pick returns row k's best word.
func (g *greedySearch[T]) chooseOutput() {
	first := &g.members[0]
	v := g.o.Vocab
	switch sl := g.short; {
	case g.fast != nil: // bfloat16 products, the words that can matter rescored (bf16Search)
		g.round = func(from, to int) { g.fast.round(any(first.outIn).([]float32), from, to) }
		g.output = func(p, parts, n int) { g.fast.multiply(n, p, parts) }
		g.pick = func(_ *greedyPart[T], k int) int {
			ld := g.fast.o.amx.Stride()
			return kernels.Argmax(g.fast.c[k*ld : k*ld+v])
		}
	case sl != nil: // the shortlist's words, in float32
		g.output = func(p, parts, n int) {
			m := len(sl.ids)
			sl.output(n, first.outIn, first.logits[:n*m], m*p/parts, m*(p+1)/parts)
		}
		g.pick = func(_ *greedyPart[T], k int) int {
			m := len(sl.ids)
			return sl.argmax(first.logits[k*m:(k+1)*m], g.slots[k].cands)
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
