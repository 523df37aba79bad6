package decoder

import (
	"fmt"
	"sync"

	"github.com/attend-nmt/attend/encoder"
	"github.com/attend-nmt/attend/kernels"
)

// Hypothesis is one decoded sentence: the target ids without </s>, and for each emitted id (and the final </s>
// when it was produced) the attention weights over the source words.
type Hypothesis struct {
	Tokens    []int
	Attention [][]float32 // len(Tokens) or len(Tokens)+1 rows of srcLen weights
	Finished  bool        // ended with </s> rather than at the length limit
}

// Block is a group of encoded sentences waiting for GreedyQueue: the encoder output of a batch, the source
// length of each of its rows, and the caller's id of each row to decode. Only the first len(IDs) rows are
// decoded; later rows (padding) are skipped.
type Block[T kernels.Float] struct {
	Enc *encoder.Output[T]
	// Others are, for an Ensemble, the encoder outputs of the same batch by its other members, in order (Enc is
	// the first member's); nil for a Decoder.
	Others  []*encoder.Output[T]
	Lengths []int
	IDs     []int
	// Shortlist, optional, restricts each row to its own candidate words. Every block of a search has one, all
	// with the same Output, or none has.
	Shortlist *Shortlist[T]
}

// GreedyQueue decodes greedily, as Greedy does, every sentence of the blocks that next returns (nil when there
// are no more), in a batch of at most rows rows that is kept full: when a sentence ends, its row is refilled
// at once with the next sentence of the queue, whose encoder states, keys, length and initial decoder state
// are copied into the row. Only when the queue is empty does the batch shrink. done receives each
// hypothesis with its block's id, in the order the sentences end. next is called from GreedyQueue's goroutine,
// when the sentences of the previous block have all entered the batch, so it can encode lazily.
//
// A block without sentences (no IDs) from next means that none is waiting yet, not that the queue has ended:
// the rows in the batch take their step and next is asked again at the next step that has a free row; when the
// batch is empty, GreedyQueue returns. A server feeds sentences that arrive while others are being decoded
// this way, each entering the batch at the first free row.
//
// threads goroutines share each step: each advances its share of the rows (attention and LSTM), then each
// computes its share of the vocabulary's logits (or of the shortlist's words) for all the rows, so that the
// output layer's weights, the largest matrix, are read once per step for the whole batch, then each picks the
// best word of its share of the rows. (Matrix products should then run single-threaded.)
//
// Sentences of different source lengths share the batch padded to the longest of them (masked as in a batch
// of the encoder): the padded source length grows as longer sentences enter and shrinks as they leave, so a
// queue sorted by source length (as data.MakeBatches sorts) keeps the padding small. A sentence's words do not
// depend on the batch it is decoded in, up to the summation order of the matrix products.
//
// After the first steps, a step allocates nothing: the words and attention of each row are kept in buffers
// that are reused, and copied out once per sentence.
//
// The output layer is chosen once, here, from products: bfloat16 ones (not Products.Float32) score the
// vocabulary in bfloat16 and rescore the words near the best exactly (bf16Output), for a decoder alone whose
// blocks have no shortlist; float32 products use the decoder's own output layer.
func (d *Decoder[T]) GreedyQueue(rows, threads int, products kernels.Products, next func() *Block[T], bos, eos, maxLen int, done func(id int, h Hypothesis)) {
	d.single().GreedyQueue(rows, threads, products, next, bos, eos, maxLen, done)
}

// GreedyQueue is Decoder.GreedyQueue with the ensemble: each block carries the first member's encoder output in
// Enc and the other members' in Others, each member stepping its own state of the batch's rows. The blocks of
// several members must not have a shortlist, and they score in float32 whatever the products.
func (e *Ensemble[T]) GreedyQueue(rows, threads int, products kernels.Products, next func() *Block[T], bos, eos, maxLen int, done func(id int, h Hypothesis)) {
	var fast *bf16Output
	if !e.mean {
		fast = e.members[0].bf16For(products)
	}
	e.greedyQueue(rows, threads, fast, next, bos, eos, maxLen, done)
}

// greedyQueue is GreedyQueue with the output layer in bfloat16 fast, or the members' own with nil.
func (e *Ensemble[T]) greedyQueue(rows, threads int, fast *bf16Output, next func() *Block[T], bos, eos, maxLen int, done func(id int, h Hypothesis)) {
	if maxLen < 1 {
		for b := next(); b != nil; b = next() {
			for _, id := range b.IDs {
				done(id, Hypothesis{})
			}
		}
		return
	}
	g := &greedySearch[T]{e: e, next: next, bos: bos, rows: rows,
		prev:  make([]int, rows),
		slots: make([]greedyRow, rows),
		dead:  make([]bool, rows),
		parts: make([]greedyPart[T], max(1, threads)),
		best:  make([]int, rows),
		wake:  make(chan int),
		idle:  make(chan struct{}),
	}
	for _, d := range e.members {
		g.models = append(g.models, &greedyModel[T]{d: d, st: d.newState(rows, 0),
			mem:    &Memory[T]{MemDim: d.Cfg.MemDim, KeyWidth: d.Attn.KeyWidth(), Lengths: make([]int, rows)},
			views:  make([]greedyView[T], len(g.parts)),
			outIn:  make([]T, rows*d.OutIn()),
			logits: make([]T, rows*d.Cfg.Vocab),
		})
	}
	if e.mean {
		v := e.members[0].Cfg.Vocab
		for p := range g.parts {
			g.parts[p] = greedyPart[T]{mean: make([]float64, v), exps: make([]T, v), logits: make([][]T, len(g.models))}
		}
	}
	if first := g.models[0]; fast != nil {
		g.fast = fast
		g.outIn32 = any(first.outIn).([]float32)
		g.amxIn = kernels.NewAMXInput(rows, first.d.OutIn())
		g.logits32, g.ld = make([]float32, g.fast.amx.OutputLen(rows)), g.fast.amx.Stride()
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
	// The helpers have exited when GreedyQueue returns: none outlives the search (and the next search's
	// goroutines reuse theirs instead of allocating new ones).
	defer helpers.Wait()
	defer close(g.wake)
	first := g.models[0] // whose attention the hypotheses keep
	n := 0               // rows in the batch: 0 … n-1
	for {
		for n < rows && g.fill(n) {
			n++
		}
		if n == 0 {
			return
		}
		g.fit(n)
		sl := first.mem.SrcLen
		g.step()
		for k := 0; k < n; k++ {
			row := &g.slots[k]
			best := g.best[k]
			for _, w := range first.weights[k*sl : k*sl+first.mem.Lengths[k]] {
				row.attn = append(row.attn, float32(w))
			}
			row.steps++
			if best != eos {
				row.tokens = append(row.tokens, best)
				g.prev[k] = best
			}
			g.dead[k] = best == eos || row.steps >= maxLen
			if g.dead[k] {
				done(row.id, row.hypothesis(best == eos, first.mem.Lengths[k]))
			}
		}
		// The ended rows' words leave the shortlist only now: removing one moves another word's slot, which
		// the logits of the rows after it were laid out by.
		for k := 0; g.short != nil && k < n; k++ {
			if g.dead[k] {
				g.short.remove(g.slots[k].cands)
			}
		}
		// Fill each hole with the last row.
		for k := 0; k < n; {
			if !g.dead[k] {
				k++
				continue
			}
			n--
			if k != n {
				g.move(n, k)
			}
		}
		g.setRows(n)
	}
}

// Phases of a step for greedySearch.run.
const (
	phaseAdvance = iota // attention and LSTM of a share of the rows
	phaseOutput         // logits of a share of the vocabulary
	phaseSelect         // the best word of a share of the rows
)

// step advances the batch's rows by one word, on every part, and leaves each row's best word in g.best.
func (g *greedySearch[T]) step() {
	for _, phase := range []int{phaseAdvance, phaseOutput, phaseSelect} {
		for p := 1; p < len(g.parts); p++ {
			g.wake <- phase
		}
		g.run(0, phase)
		for p := 1; p < len(g.parts); p++ {
			<-g.idle
		}
	}
}

// run does part p's share of a phase of the step, for every member: GreedyQueue's goroutine does part 0,
// helper p part p.
func (g *greedySearch[T]) run(p, phase int) {
	first := g.models[0]
	n, parts := first.st.Rows, len(g.parts)
	from, to := n*p/parts, n*(p+1)/parts
	switch phase {
	case phaseAdvance:
		if from == to {
			return
		}
		for _, m := range g.models {
			view := &m.views[p]
			m.st.view(&view.st, from, to)
			m.mem.view(&view.mem, from, to)
			view.buf.outIn = m.outIn[from*m.d.OutIn():]
			sl := m.mem.SrcLen
			m.d.advance(&view.st, g.prev[from:to], &view.mem, view.buf, m.weights[from*sl:to*sl])
		}
		if g.round != nil {
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
	first := g.models[0]
	v, oi := first.d.Cfg.Vocab, first.d.OutIn()
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
		g.round = func(from, to int) { g.amxIn.Round(g.outIn32, oi, from, to) }
		g.output = func(p, parts, n int) {
			strips := fast.amx.Strips()
			first, last := strips*p/parts, strips*(p+1)/parts
			if err := fast.amx.Mul(g.amxIn, n, g.logits32, first, last); err != nil {
				panic(err) // the shapes were made to fit
			}
			from, to := fast.amx.Columns(first, last)
			kernels.AddBiasStrided(g.logits32[from:], n, g.ld, fast.bias[from:to])
		}
		g.pick = func(_ *greedyPart[T], k int) int {
			word, _ := fast.best(g.outIn32[k*oi:(k+1)*oi], g.logits32[k*g.ld:k*g.ld+v])
			return word
		}
	default: // the members' own float32 output layers
		g.output = func(p, parts, n int) {
			for _, m := range g.models {
				m.d.output(n, m.outIn, m.logits[:n*v], v*p/parts, v*(p+1)/parts)
			}
		}
		g.pick = func(_ *greedyPart[T], k int) int { return kernels.Argmax(first.logits[k*v : (k+1)*v]) }
		if g.e.mean {
			g.pick = func(part *greedyPart[T], k int) int {
				for i, m := range g.models {
					part.logits[i] = m.logits[k*v : (k+1)*v]
				}
				MeanLogProbs(part.mean, part.logits, part.exps)
				return kernels.Argmax(part.mean)
			}
		}
	}
}

// greedySearch is the batch of GreedyQueue: rows 0 … Rows-1 of every member's state are being decoded.
type greedySearch[T kernels.Float] struct {
	e      *Ensemble[T]
	models []*greedyModel[T] // each member's share of the search, in the ensemble's order
	next   func() *Block[T]
	bos    int
	rows   int // the most rows

	parts []greedyPart[T] // what each goroutine stepping the batch needs beyond the members' views
	best  []int           // the best word of each row at this step
	short *shortlist[T]   // the words the batch scores, nil to score the whole vocabulary
	// fast is the output layer in bfloat16 (GreedyQueue's products), or nil; with it, amxIn holds the first
	// member's outIn rounded to bf16, outIn32 is its outIn as the float32 slice it is, and logits32 the bf16
	// logits, AMXWeights' padded product, ld (its Stride) apart.
	fast              *bf16Output
	amxIn             *kernels.AMXInput
	ld                int
	outIn32, logits32 []float32
	// The output layer, as chooseOutput decided.
	round  func(from, to int)
	output func(p, parts, n int)
	pick   func(part *greedyPart[T], k int) int
	wake   chan int      // a phase for a helper goroutine
	idle   chan struct{} // a helper's phase is done
	bufLen int           // the source length the members' scratch and weights were made for
	prev   []int
	slots  []greedyRow
	dead   []bool

	// The block whose sentences enter the batch next, from its row cursor on.
	block    *Block[T]
	blockLen int // its padded source length
	cursor   int
	blocks   int  // blocks taken so far
	drained  bool // next returned nil
}

// greedyModel is one member's share of greedySearch: its state and memory of the batch's rows, each
// goroutine's view of its rows with its own scratch, the output layer's input and logits of the step, the
// attention weights of the step (the first member's are the hypotheses'), and its start of the block whose
// sentences enter the batch next.
type greedyModel[T kernels.Float] struct {
	d                      *Decoder[T]
	st                     *State[T]
	mem                    *Memory[T]
	views                  []greedyView[T]
	outIn, logits, weights []T // (rows, OutIn); (rows, Vocab), or (rows, len(short.ids)) with a shortlist; (rows, bufLen)
	blockMem               *Memory[T]
	blockSt                *State[T]
}

// greedyView is one goroutine's share of the rows of a member's state and memory, without copying, and its own
// scratch.
type greedyView[T kernels.Float] struct {
	st  State[T]
	mem Memory[T]
	buf *Scratch[T]
}

// greedyPart is one goroutine's scratch for ranking an ensemble's words by their mean log-probability: the
// mean, the exps of a member's logits, and each member's logits of the row; empty for one decoder.
type greedyPart[T kernels.Float] struct {
	mean   []float64
	exps   []T
	logits [][]T
}

// greedyRow is what greedy search keeps of the sentence in one row: its id, steps taken, the words so far and
// the attention of every step, one row of its source length each; the buffers are reused by the row's next
// sentences.
type greedyRow struct {
	id, steps int
	tokens    []int
	attn      []float32
	cands     []int // the target ids the sentence may use, with a shortlist
}

// hypothesis copies out the row's sentence, whose source has srcLen words.
func (r *greedyRow) hypothesis(finished bool, srcLen int) Hypothesis {
	return hypothesis(append([]int(nil), r.tokens...), append(make([]float32, 0, len(r.attn)), r.attn...), r.steps, finished, srcLen)
}

// fill puts the next sentence of the queue into row k, which must be the first free row, and reports whether
// there was one.
func (g *greedySearch[T]) fill(k int) bool {
	for g.block == nil || g.cursor == len(g.block.IDs) {
		if g.drained {
			return false
		}
		if g.block = g.next(); g.block == nil {
			g.drained = true
			return false
		}
		if len(g.block.IDs) == 0 { // none waiting yet: ask again at the next step
			g.cursor = 0
			return false
		}
		g.useShortlist(g.block)
		g.start(g.block)
		g.blockLen = g.block.Enc.SrcLen
		g.cursor = 0
	}
	c := g.cursor
	g.cursor++
	s := &g.slots[k]
	if g.short != nil {
		s.cands = append(s.cands[:0], g.block.Shortlist.Candidates[c]...)
		g.short.add(s.cands)
	}
	if n := g.block.Lengths[c]; n > g.models[0].mem.SrcLen {
		g.setSrcLen(k, max(n, 1))
	}
	for _, m := range g.models {
		m.mem.CopyRow(k, m.blockMem, c)
		m.st.CopyRow(k, m.blockSt, c)
	}
	g.prev[k] = g.bos
	s.id, s.steps, s.tokens, s.attn = g.block.IDs[c], 0, s.tokens[:0], s.attn[:0]
	return true
}

// start makes every member's memory and initial state of block, from its encoder output.
func (g *greedySearch[T]) start(block *Block[T]) {
	if len(block.Others) != len(g.models)-1 {
		panic(fmt.Sprintf("decoder: GreedyQueue got a block of %d encoder outputs for %d decoders", 1+len(block.Others), len(g.models)))
	}
	for i, m := range g.models {
		enc := block.Enc
		if i > 0 {
			enc = block.Others[i-1]
		}
		if enc.Rows != block.Enc.Rows || enc.SrcLen != block.Enc.SrcLen {
			panic(fmt.Sprintf("decoder: GreedyQueue got a block whose encoder outputs are %d×%d and %d×%d", block.Enc.Rows, block.Enc.SrcLen, enc.Rows, enc.SrcLen))
		}
		m.blockMem, m.blockSt = m.d.Start(enc, block.Lengths)
	}
}

// useShortlist checks that block, the next block of the queue, has candidates exactly when the blocks before
// it had, and makes the search's shortlist with the first block that has them.
func (g *greedySearch[T]) useShortlist(block *Block[T]) {
	sl := block.Shortlist
	d := g.models[0].d
	if sl != nil {
		if g.e.mean {
			panic("decoder: an Ensemble's GreedyQueue got a block with a shortlist")
		}
		sl.check(len(block.IDs), d.Cfg.Vocab)
	}
	switch {
	case g.blocks > 0 && (sl != nil) != (g.short != nil):
		panic("decoder: GreedyQueue got blocks with and without a shortlist")
	case sl != nil && g.short != nil && sl.Output != g.short.rows:
		panic("decoder: GreedyQueue got blocks whose shortlists have different OutputRows")
	case sl != nil && g.short == nil:
		g.short = newShortlist(sl.Output, d.Cfg.Vocab, d.OutIn())
	}
	if g.blocks++; g.blocks == 1 {
		g.chooseOutput()
	}
}

// fit sets the batch to n rows, pads it to the longest source among them and makes sure Step's scratch is
// large enough.
func (g *greedySearch[T]) fit(n int) {
	g.setRows(n)
	longest := 1
	for _, l := range g.models[0].mem.Lengths[:n] {
		longest = max(longest, l)
	}
	if longest != g.models[0].mem.SrcLen {
		g.setSrcLen(n, longest)
	}
	if srcLen := g.models[0].mem.SrcLen; srcLen > g.bufLen { // room for the longest of the block, which is likely to come
		g.bufLen = max(srcLen, g.blockLen)
		for _, m := range g.models {
			var gateW []T // the LSTM's weights in Step's layout, copied once for every part
			if m.views[0].buf != nil {
				gateW = m.views[0].buf.gateW
			}
			for p := range m.views {
				m.views[p].buf = m.d.newScratch(g.rows, g.bufLen, gateW)
				gateW = m.views[p].buf.gateW
			}
			m.weights = make([]T, g.rows*g.bufLen)
		}
	}
}

// setRows sets the number of rows of every member's state and memory.
func (g *greedySearch[T]) setRows(n int) {
	for _, m := range g.models {
		m.st.Rows, m.mem.Rows = n, n
	}
}

// setSrcLen pads the first rows rows of the batch, every member's memory and attention state, to srcLen source
// positions.
func (g *greedySearch[T]) setSrcLen(rows, srcLen int) {
	g.setRows(rows)
	for _, m := range g.models {
		m.mem.SetSrcLen(srcLen)
		m.st.SetSrcLen(srcLen)
	}
}

// move puts row from of the batch into row to, whose sentence has ended.
func (g *greedySearch[T]) move(from, to int) {
	for _, m := range g.models {
		m.st.CopyRow(to, m.st, from)
		m.mem.CopyRow(to, m.mem, from)
	}
	g.prev[to], g.dead[to] = g.prev[from], g.dead[from]
	g.slots[to], g.slots[from] = g.slots[from], g.slots[to]
}
