package model

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"

	"github.com/attend-nmt/attend/align"
	"github.com/attend-nmt/attend/backend"
	"github.com/attend-nmt/attend/data"
	"github.com/attend-nmt/attend/decoder"
	"github.com/attend-nmt/attend/dist"
	"github.com/attend-nmt/attend/graph"
	"github.com/attend-nmt/attend/kernels"
	"github.com/attend-nmt/attend/param"
)

// Trainer makes optimizer steps on a model: forward and backward through a cached gorgonia graph per batch shape,
// token-averaged loss, global-norm clipping and Adam.
type Trainer[T kernels.Float] struct {
	Model     *Seq2Seq[T]
	Optimizer *Adam[T]
	Clip      float64
	Grads     *param.Set[T]
	// Unfused builds graphs from gorgonia's own ops instead of the fused kernels: slower, kept to check them.
	Unfused bool
	// LabelSmoothing is ε of the training loss's smoothed targets (train.label_smoothing); set it before the
	// first step, since compiled graphs keep it.
	LabelSmoothing float64
	// Guide gives the links of training example i (data.Batch.Index) for guided alignment, and GuideWeight the
	// weight of its loss (train.guided_alignment_weight); nil: no guided alignment. Set them before the first
	// step, since compiled graphs keep them. With several workers Guide is called from their goroutines at once.
	Guide       func(i int) []align.Link
	GuideWeight float64
	// SplitVocabulary has several workers in bfloat16 (SetProducts) share the output layer's vocabulary out between them
	// rather than each take its rows through all of it (kernels.OutputTeam, train.split_vocabulary): the same
	// sums in another order. Set it before the first step.
	SplitVocabulary bool
	// workers step a batch together, each its share of the rows on a goroutine of its own (SetWorkers); there
	// is always one, workers[0], and with one it steps the whole batch on the caller's goroutine.
	workers   []*worker[T]
	draws     *kernels.Arena[T] // with several workers: the batch's dropout masks and noise, drawn before they are shared out
	squares   []float64         // the gradients' sums of squares per norm block, filled by the reduction (normSquares)
	maxGraphs int
}

// worker is what one of a trainer's workers keeps: its compiled graphs, the scratch they share, and its part of
// the batch being stepped.
type worker[T kernels.Float] struct {
	cache []*trainGraph[T]
	arena *kernels.Arena[T]   // the fused ops' scratch, shared by every cached graph of the worker
	mul   *kernels.Multiplier // what its products multiply with beside float32 BLAS (SetWorkers, SetProducts)
	uses  int
	part  data.Batch     // its rows of the batch in progress
	tg    *trainGraph[T] // the graph that runs them (nil: no target words in them)
	err   error
}

// NewTrainer prepares a trainer keeping at most maxGraphs compiled shapes (least recently used are dropped).
func NewTrainer[T kernels.Float](m *Seq2Seq[T], lr, clip float64, maxGraphs int) *Trainer[T] {
	return &Trainer[T]{Model: m, Optimizer: NewAdam(m.Params, lr), Clip: clip, Grads: m.Params.ZerosLike(), maxGraphs: max(maxGraphs, 1),
		workers: []*worker[T]{{arena: kernels.NewArena[T]()}}, draws: kernels.NewArena[T]()}
}

// SetWorkers has n workers step every batch together (1 or less: one), each a share of its sentences
// (data.Batch.Shard) through graphs of its own, on a goroutine of its own with single-threaded matrix products;
// their gradients and losses are added up in worker order, then the trainer makes one update. The masks of
// dropout are drawn for the whole batch and shared out by rows, so n workers train as one does, to float32
// summation order. Each worker keeps up to the trainer's graph count of compiled shapes and a scratch of its
// own. Call it before the first step (or Reserve): it drops the compiled graphs.
func (t *Trainer[T]) SetWorkers(n int) {
	for _, w := range t.workers {
		for _, tg := range w.cache {
			tg.vm.Close()
		}
	}
	t.workers = make([]*worker[T], max(n, 1))
	for i := range t.workers {
		t.workers[i] = &worker[T]{arena: kernels.NewArena[T]()}
	}
	// Products on one thread: the decoder's gate products run on weights packed once a step (PackWeights).
	t.setMultipliers(kernels.Float32Products()) // float32 products never fail
}

// setMultipliers gives the workers multipliers of products (kernels.NewMultipliers), or fails, changing nothing.
func (t *Trainer[T]) setMultipliers(products kernels.Products) error {
	muls, err := kernels.NewMultipliers(products, len(t.workers))
	if err != nil {
		return err
	}
	for i, w := range t.workers {
		w.mul = muls[i]
	}
	return nil
}

// SetProducts has every worker's graphs multiply in products. In bfloat16 the output layer runs on an
// AMXOutput in each worker's arena (kernels.OutputXent): the terms rounded (kernels.BF16), on Intel AMX or on
// AVX512-BF16; or split, each term two bfloat16s summed in three products (kernels.BF16x3), on AMX, when the
// decoder's recurrent products run on AMX too. The weights, the sums and the optimizer stay float32. It fails,
// changing nothing, where the weights are not float32 and the products are not. Call it after SetWorkers, which
// starts the workers' arenas afresh.
func (t *Trainer[T]) SetProducts(products kernels.Products) error {
	if products.Float32() {
		return nil
	}
	if _, ok := any(T(0)).(float32); !ok {
		return fmt.Errorf("model: bfloat16 products need float32 weights")
	}
	// The workers share one packing of the output layer's weights, made once a step (runWorkers).
	return t.setMultipliers(products)
}

// StepResult reports one optimizer step.
type StepResult struct {
	Loss float64 // token-averaged cross-entropy of the batch (the translation's)
	// Guided is the guided-alignment cross-entropy of the batch over its target words (unweighted; 0 without
	// guided alignment): the training minimises Loss + GuideWeight·Guided.
	Guided   float64
	Tokens   int     // target words in the batch
	GradNorm float64 // before clipping
	// Skipped is set when the loss or the gradient norm was not finite: the update was not applied.
	Skipped bool
}

// accumulate sets t.Grads to the gradient of b's summed loss divided by tokens and returns the summed loss and
// guided-alignment cross-entropy; with squares (not nil, one value per norm block: normSquares), it also leaves
// there the sums of squares of t.Grads' norm blocks, as GlobalNorm adds them. A batch without target words
// gives zeros. With several workers (SetWorkers), each runs the graph of its share of b's rows, and their
// gradients and losses are added in worker order.
func (t *Trainer[T]) accumulate(b *data.Batch, rng rand.Source, tokens int, squares []float64) (loss, guided float64, err error) {
	if b.TgtTokens() == 0 {
		t.Grads.Zero()
		clear(squares)
		return 0, 0, nil
	}
	if amx := t.workers[0].mul.OutputScratch(); amx != nil {
		amx.WeightsChanged() // the workers share its packing of the output layer's weights: pack them afresh
	}
	var graphs []*trainGraph[T]
	if len(t.workers) == 1 || b.Real < 2 {
		tg, err := t.workers[0].graphFor(t, shape{b.Rows, b.SrcLen, b.TgtLen})
		if err != nil {
			return 0, 0, err
		}
		if err := tg.run(b, t.Model.Cfg.Dropout, rng, t.Guide); err != nil {
			return 0, 0, err
		}
		graphs = append(graphs, tg)
	} else {
		if err := t.runWorkers(b, rng); err != nil {
			return 0, 0, err
		}
		for _, w := range t.workers {
			if w.tg != nil {
				graphs = append(graphs, w.tg)
			}
		}
	}
	loss, guided = t.collect(graphs, T(1/float64(tokens)), squares)
	return loss, guided, nil
}

// collect is the reduction of a step: it sets t.Grads to scale × the sum of the gradients of graphs' last runs,
// added in order as one graph's would be, in one pass over memory (graph.SumGrads) that also fills squares (when
// not nil) with the sums of squares of the norm blocks; it returns the graphs' summed losses and guided-alignment
// cross-entropies, and resets the graphs for their next runs.
func (t *Trainer[T]) collect(graphs []*trainGraph[T], scale T, squares []float64) (loss, guided float64) {
	ps := make([]*graph.Params[T], len(graphs))
	for i, tg := range graphs {
		ps[i] = tg.params
	}
	var done func(k int, values []T)
	if squares != nil {
		done = func(k int, values []T) { squares[k] = sumSquares(values) }
	}
	graph.SumGrads(t.Grads, scale, ps, normBlock, done)
	for _, tg := range graphs {
		l, g := tg.losses()
		loss, guided = loss+l, guided+g
		tg.vm.Reset()
	}
	return loss, guided
}

// normSquares is the trainer's buffer of one sum of squares per norm block of its gradients (see GlobalNorm).
func (t *Trainer[T]) normSquares() []float64 {
	if n := normBlocks(t.Grads.Len()); len(t.squares) != n {
		t.squares = make([]float64, n)
	}
	return t.squares
}

// runWorkers has every worker run the forward and backward pass of its share of b's rows, each on a goroutine,
// with the dropout masks and noise that a graph of the whole batch would have drawn from rng; the gradients are
// left in the workers' graphs (worker.tg). OpenBLAS runs each product on one thread meanwhile, since the
// workers already keep the cores busy.
func (t *Trainer[T]) runWorkers(b *data.Batch, rng rand.Source) error {
	n := len(t.workers)
	var first *trainGraph[T]
	for i, w := range t.workers {
		w.part, w.tg, w.err = b.Shard(i, n), nil, nil
		if w.part.TgtTokens() == 0 {
			continue
		}
		tg, err := w.graphFor(t, shape{w.part.Rows, w.part.SrcLen, w.part.TgtLen})
		if err != nil {
			t.resetWorkers()
			return err
		}
		w.tg = tg
		if first == nil {
			first = tg
		}
	}
	// Draw the whole batch's masks and noise, in the order and shapes of a graph of b, and share them out.
	masks, noise := t.drawBuffers(first, b.Rows)
	drawNoise(masks, noise, t.Model.Cfg.Dropout, rng)
	if threads := backend.BLASThreads(); threads > 1 {
		backend.SetBLASThreads(1)
		defer backend.SetBLASThreads(threads)
	}
	// The workers with rows share the output layer's vocabulary out between them (kernels.OutputTeam).
	team := t.outputTeam()
	if team != nil {
		var members []*kernels.AMXOutput
		for _, w := range t.workers {
			if w.tg != nil {
				members = append(members, w.mul.OutputScratch())
			}
		}
		team.Begin(members)
		defer team.End()
	}
	var wg sync.WaitGroup
	for i, w := range t.workers {
		if w.tg == nil {
			continue
		}
		lo, _ := data.ShardBounds(b.Real, i, n)
		wg.Go(func() {
			w.tg.feed(&w.part, t.Guide)
			w.tg.takeNoise(masks, noise, b.Rows, lo)
			if w.err = w.tg.forwardBackward(); w.err != nil && team != nil {
				team.Abort() // the others' output layers must not wait for this worker's
			}
		})
	}
	wg.Wait()
	var errs []error
	for _, w := range t.workers {
		errs = append(errs, w.err)
	}
	if err := errors.Join(errs...); err != nil {
		t.resetWorkers()
		return err
	}
	return nil
}

// outputTeam is the team of the workers' output layers (kernels.OutputTeam) when they share the vocabulary out:
// with several workers in bfloat16 (SetProducts) and SplitVocabulary set, in fused graphs. nil: each worker's output layer
// takes its own rows through the whole vocabulary.
func (t *Trainer[T]) outputTeam() *kernels.OutputTeam {
	amx := t.workers[0].mul.OutputScratch()
	if len(t.workers) < 2 || amx == nil || t.Unfused || !t.SplitVocabulary {
		return nil
	}
	return amx.Team()
}

// drawBuffers are the buffers of the dropout masks and noise of a graph like tg (its masks, in its order) for a
// batch of rows rows instead of tg.rows, from the trainer's draws.
func (t *Trainer[T]) drawBuffers(tg *trainGraph[T], rows int) (masks [][]T, noise []T) {
	masks = make([][]T, len(tg.masks))
	for k, steps := range tg.maskSteps {
		width := len(tg.masks[k]) / (steps * tg.rows)
		masks[k] = t.draws.Get(fmt.Sprintf("mask%d", k), steps*rows*width)
	}
	if tg.noise != nil {
		noise = t.draws.Get("noise", tg.tgtLen*rows*tg.srcLen)
	}
	return masks, noise
}

// resetWorkers resets the graphs of a step that failed, so that none keeps the gradients of a part.
func (t *Trainer[T]) resetWorkers() {
	for _, w := range t.workers {
		if w.tg != nil && w.err == nil {
			w.tg.vm.Reset()
		}
		w.tg = nil
	}
}

// result is the StepResult of a batch of tokens target words whose summed loss, guided-alignment term
// included, is sum, and guided-alignment cross-entropy guided.
func (t *Trainer[T]) result(sum, guided float64, tokens int) StepResult {
	return StepResult{Loss: (sum - t.lossOpts().GuideWeight*guided) / float64(tokens), Guided: guided / float64(tokens), Tokens: tokens}
}

// lossOpts is how the trainer's graphs score their outputs.
func (t *Trainer[T]) lossOpts() decoder.GraphLoss {
	opts := decoder.GraphLoss{LabelSmoothing: t.LabelSmoothing}
	if t.Guide != nil {
		opts.GuideWeight = t.GuideWeight
	}
	return opts
}

// Step is one training step: gradients, clipping, Adam update. A non-finite loss or gradient norm skips the
// update (the weights and the optimizer are left as they were) and sets Skipped. rng draws this process's
// dropout masks: a *rand.PCG (rather than a *rand.Rand over it) lets long masks be drawn on every core, with the
// same values.
//
// Every process of group holds the batch (dist.Single: this process alone): this process takes its shard of the
// rows (data.Batch.Shard), the gradients and losses are summed over the group, and every process makes the same
// update, so the weights stay identical everywhere. The loss is averaged over the whole batch's target words, as
// a single process training on the whole batch would. A group of more than one process needs float32 weights.
func (t *Trainer[T]) Step(b *data.Batch, rng rand.Source, group dist.Group) (StepResult, error) {
	tokens := b.TgtTokens()
	shard := b
	var squares []float64 // the norm's partial sums, taken during the reduction when no other process adds to it
	if group.Size() > 1 {
		s := b.Shard(group.Rank(), group.Size())
		shard = &s
	} else {
		squares = t.normSquares()
	}
	sum, guided, err := t.accumulate(shard, rng, tokens, squares)
	if err != nil {
		return StepResult{}, err
	}
	if group.Size() > 1 {
		grads, ok := any(t.Grads.Flat()).([]float32)
		if !ok {
			panic("model: training across processes needs float32 weights")
		}
		if err := group.SumFloat32(grads); err != nil {
			return StepResult{}, err
		}
		losses := []float64{sum, guided}
		if err := group.SumFloat64(losses); err != nil {
			return StepResult{}, err
		}
		sum, guided = losses[0], losses[1]
	}
	res := t.result(sum, guided, tokens)
	if tokens == 0 {
		return StepResult{}, nil
	}
	if !isFinite(res.Loss) || !isFinite(res.Guided) {
		res.Skipped = true
		return res, nil
	}
	if squares != nil {
		res.GradNorm = normOf(t.Grads, squares)
	} else {
		res.GradNorm = GlobalNorm(t.Grads)
	}
	if !isFinite(res.GradNorm) {
		res.Skipped = true
		return res, nil
	}
	t.Optimizer.StepScaled(t.Model.Params, t.Grads, T(ClipScale(res.GradNorm, t.Clip)))
	return res, nil
}

// Reserve sizes the scratch that all cached graphs share for batches of up to rows × srcLen source and tgtLen
// target positions, by running the forward and backward pass of one batch of that shape, of unknown words, on a
// graph of its own that is then dropped: the gradients are discarded and the weights and the optimizer are left
// alone. Without it the scratch grows batch by batch, and each cached graph keeps the smaller buffers it last
// used alive until it runs again: on Multi30k, a peak of live memory about 100 MB above the steady state. With
// several workers each sizes its own scratch for its largest share of such a batch.
func (t *Trainer[T]) Reserve(rows, srcLen, tgtLen int) error {
	if rows == 0 || srcLen == 0 || tgtLen == 0 {
		return nil
	}
	n := len(t.workers)
	if rows < 2 {
		n = 1 // accumulate steps such a batch on worker 0 alone
	}
	part := (rows + n - 1) / n // the most rows of a worker's share (data.Batch.Shard)
	for _, w := range t.workers[:n] {
		tg, err := t.reserve(w, part, srcLen, tgtLen)
		if err != nil {
			return err
		}
		if n > 1 && w == t.workers[0] {
			t.drawBuffers(tg, rows)
		}
	}
	return nil
}

// reserve runs worker w's forward and backward pass of a batch of unknown words of the given shape on a graph
// that is then closed, and returns that graph.
func (t *Trainer[T]) reserve(w *worker[T], rows, srcLen, tgtLen int) (*trainGraph[T], error) {
	unknown := data.Example{Src: slices.Repeat([]int{data.UnkID}, srcLen), Tgt: slices.Repeat([]int{data.UnkID}, tgtLen-1)}
	b := &data.MakeBatches(slices.Repeat([]data.Example{unknown}, rows), data.BatchOptions{BatchSize: rows}, nil)[0]
	tg, err := t.Model.buildGraph(shape{rows, srcLen, tgtLen}, !t.Unfused, t.lossOpts(), w.arena, w.mul)
	if err != nil {
		return nil, err
	}
	defer tg.vm.Close()
	err = tg.run(b, t.Model.Cfg.Dropout, rand.New(rand.NewPCG(0, 0)), nil)
	tg.vm.Reset()
	return tg, err
}

func isFinite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }

// graphFor is the worker's compiled graph of shape s for trainer t, compiled now if it has none.
func (w *worker[T]) graphFor(t *Trainer[T], s shape) (*trainGraph[T], error) {
	w.uses++
	for _, tg := range w.cache {
		if tg.shape == s {
			tg.lastUse = w.uses
			return tg, nil
		}
	}
	// Evict first: the evicted graph's values are garbage before the new graph allocates its own.
	if len(w.cache) >= t.maxGraphs {
		oldest := 0
		for i, c := range w.cache {
			if c.lastUse < w.cache[oldest].lastUse {
				oldest = i
			}
		}
		w.cache[oldest].vm.Close()
		w.cache = append(w.cache[:oldest], w.cache[oldest+1:]...)
	}
	tg, err := t.Model.buildGraph(s, !t.Unfused, t.lossOpts(), w.arena, w.mul)
	if err != nil {
		return nil, err
	}
	tg.lastUse = w.uses
	w.cache = append(w.cache, tg)
	return tg, nil
}
