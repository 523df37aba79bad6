package model

import (
	"math"
	"math/rand/v2"

	"github.com/attend-nmt/attend/align"
	"github.com/attend-nmt/attend/data"
	"github.com/attend-nmt/attend/decoder"
	"github.com/attend-nmt/attend/dist"
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
	// step, since compiled graphs keep them.
	Guide       func(i int) []align.Link
	GuideWeight float64
	cache       []*trainGraph[T]
	arena       *kernels.Arena[T] // the fused ops' scratch, shared by every cached graph
	maxGraphs   int
	uses        int
}

// NewTrainer prepares a trainer keeping at most maxGraphs compiled shapes (least recently used are dropped).
func NewTrainer[T kernels.Float](m *Seq2Seq[T], lr, clip float64, maxGraphs int) *Trainer[T] {
	return &Trainer[T]{Model: m, Optimizer: NewAdam(m.Params, lr), Clip: clip, Grads: m.Params.ZerosLike(), maxGraphs: max(maxGraphs, 1), arena: kernels.NewArena[T]()}
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

// Gradients computes the gradient of the batch's token-averaged loss into t.Grads (zeroed first) and returns
// the loss, without updating the weights. rng draws the dropout masks.
func (t *Trainer[T]) Gradients(b *data.Batch, rng *rand.Rand) (StepResult, error) {
	t.Grads.Zero()
	tokens := b.TgtTokens()
	sum, guided, err := t.accumulate(b, rng, tokens)
	if err != nil || tokens == 0 {
		return StepResult{}, err
	}
	return t.result(sum, guided, tokens), nil
}

// accumulate adds the gradient of b's summed loss divided by tokens into t.Grads and returns the summed loss
// and guided-alignment cross-entropy. A batch without target words adds nothing.
func (t *Trainer[T]) accumulate(b *data.Batch, rng *rand.Rand, tokens int) (loss, guided float64, err error) {
	if b.TgtTokens() == 0 {
		return 0, 0, nil
	}
	tg, err := t.graphFor(shape{b.Rows, b.SrcLen, b.TgtLen})
	if err != nil {
		return 0, 0, err
	}
	return tg.run(b, t.Model.Cfg.Dropout, rng, t.Grads, T(1/float64(tokens)), t.Guide)
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
// update (the weights and the optimizer are left as they were) and sets Skipped.
func (t *Trainer[T]) Step(b *data.Batch, rng *rand.Rand) (StepResult, error) {
	return t.StepShared(b, rng, dist.Single{})
}

// StepShared is Step for a batch that every process of group holds: this process takes its shard of the rows
// (data.Batch.Shard), the gradients and losses are summed over the group, and every process makes the same
// update, so the weights stay identical everywhere. The loss is averaged over the whole batch's target words,
// as a single process training on the whole batch would. rng draws this process's dropout masks. A group of
// more than one process needs float32 weights.
func (t *Trainer[T]) StepShared(b *data.Batch, rng *rand.Rand, group dist.Group) (StepResult, error) {
	t.Grads.Zero()
	tokens := b.TgtTokens()
	shard := b
	if group.Size() > 1 {
		s := b.Shard(group.Rank(), group.Size())
		shard = &s
	}
	sum, guided, err := t.accumulate(shard, rng, tokens)
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
	res.GradNorm = GlobalNorm(t.Grads)
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
// used alive until it runs again: on Multi30k, a peak of live memory about 100 MB above the steady state.
func (t *Trainer[T]) Reserve(rows, srcLen, tgtLen int) error {
	if rows == 0 || srcLen == 0 || tgtLen == 0 {
		return nil
	}
	b := &data.Batch{Rows: rows, Real: rows, SrcLen: srcLen, TgtLen: tgtLen,
		Src: make([]int, rows*srcLen), SrcLengths: make([]int, rows), TgtIn: make([]int, rows*tgtLen), TgtOut: make([]int, rows*tgtLen)}
	for i := range b.Src {
		b.Src[i] = data.UnkID
	}
	for r := range b.SrcLengths {
		b.SrcLengths[r] = srcLen
	}
	for i := range b.TgtIn {
		b.TgtIn[i], b.TgtOut[i] = data.UnkID, data.UnkID
	}
	tg, err := t.Model.buildGraph(shape{rows, srcLen, tgtLen}, !t.Unfused, t.lossOpts(), t.arena)
	if err != nil {
		return err
	}
	defer tg.vm.Close()
	_, _, err = tg.run(b, t.Model.Cfg.Dropout, rand.New(rand.NewPCG(0, 0)), t.Grads, 0, nil)
	t.Grads.Zero()
	return err
}

func isFinite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }

func (t *Trainer[T]) graphFor(s shape) (*trainGraph[T], error) {
	t.uses++
	for _, tg := range t.cache {
		if tg.shape == s {
			tg.lastUse = t.uses
			return tg, nil
		}
	}
	// Evict first: the evicted graph's values are garbage before the new graph allocates its own.
	if len(t.cache) >= t.maxGraphs {
		oldest := 0
		for i, c := range t.cache {
			if c.lastUse < t.cache[oldest].lastUse {
				oldest = i
			}
		}
		t.cache[oldest].vm.Close()
		t.cache = append(t.cache[:oldest], t.cache[oldest+1:]...)
	}
	tg, err := t.Model.buildGraph(s, !t.Unfused, t.lossOpts(), t.arena)
	if err != nil {
		return nil, err
	}
	tg.lastUse = t.uses
	t.cache = append(t.cache, tg)
	return tg, nil
}
