package model

import (
	"math"
	"math/rand/v2"

	"github.com/attend-nmt/attend/data"
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
	Unfused   bool
	cache     []*trainGraph[T]
	arena     *kernels.Arena[T] // the fused ops' scratch, shared by every cached graph
	maxGraphs int
	uses      int
}

// NewTrainer prepares a trainer keeping at most maxGraphs compiled shapes (least recently used are dropped).
func NewTrainer[T kernels.Float](m *Seq2Seq[T], lr, clip float64, maxGraphs int) *Trainer[T] {
	return &Trainer[T]{Model: m, Optimizer: NewAdam(m.Params, lr), Clip: clip, Grads: m.Params.ZerosLike(), maxGraphs: max(maxGraphs, 1), arena: kernels.NewArena[T]()}
}

// StepResult reports one optimizer step.
type StepResult struct {
	Loss     float64 // token-averaged cross-entropy of the batch
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
	if tokens == 0 {
		return StepResult{}, nil
	}
	tg, err := t.graphFor(shape{b.Rows, b.SrcLen, b.TgtLen})
	if err != nil {
		return StepResult{}, err
	}
	sum, err := tg.run(b, t.Model.Cfg.Dropout, rng, t.Grads, T(1/float64(tokens)))
	if err != nil {
		return StepResult{}, err
	}
	return StepResult{Loss: sum / float64(tokens), Tokens: tokens}, nil
}

// Step is one training step: gradients, clipping, Adam update. A non-finite loss or gradient norm skips the
// update (the weights and the optimizer are left as they were) and sets Skipped.
func (t *Trainer[T]) Step(b *data.Batch, rng *rand.Rand) (StepResult, error) {
	res, err := t.Gradients(b, rng)
	if err != nil || res.Tokens == 0 {
		return res, err
	}
	if !isFinite(res.Loss) {
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

func isFinite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }

func (t *Trainer[T]) graphFor(s shape) (*trainGraph[T], error) {
	t.uses++
	for _, tg := range t.cache {
		if tg.shape == s {
			tg.lastUse = t.uses
			return tg, nil
		}
	}
	tg, err := t.Model.buildGraph(s, !t.Unfused, t.arena)
	if err != nil {
		return nil, err
	}
	tg.lastUse = t.uses
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
	t.cache = append(t.cache, tg)
	return tg, nil
}
