package model

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"

	"github.com/attend-nmt/attend/align"
	"github.com/attend-nmt/attend/data"
	"github.com/attend-nmt/attend/decoder"
	"github.com/attend-nmt/attend/encoder"
	"github.com/attend-nmt/attend/graph"
	"github.com/attend-nmt/attend/kernels"
	G "gorgonia.org/gorgonia"
)

// shape identifies a compiled training graph: batches with the same padded sizes share one.
type shape struct{ rows, srcLen, tgtLen int }

// trainGraph is the compiled forward and backward pass for one batch shape. The custom ops read the batch's ids
// through pointers to the feed slices, and the dropout masks through their backing slices, so running another
// batch of this shape is: copy the ids in, refill the masks, run.
type trainGraph[T kernels.Float] struct {
	shape
	params          *graph.Params[T]
	vm              G.VM
	loss            *G.Node
	src, srcLengths []int
	tgtIn, tgtOut   []int
	masks           [][]T                // dropout mask buffers (in the arena)
	maskSteps       []int                // each mask's time steps: a mask is (steps, rows, width), time-major
	noise           []T                  // Gumbel noise for an attention that samples (nil otherwise; in the arena); (tgtLen, rows, srcLen)
	guide           []T                  // guided alignment's gold (tgtLen, rows, srcLen); nil without (in the arena)
	guided          *G.Node              // the guided-alignment cross-entropy, nil without
	encOut          *encoder.GraphOutput // kept for the tests that compare with the plain-Go forward
	attention       []*G.Node
	lastUse         int
}

// maskFunc makes the input node of a dropout mask of (steps, rows, width), time-major, named name; dims is how
// the graph shapes it. It returns nil without dropout.
type maskFunc func(name string, steps, width int, dims ...int) *G.Node

// buildGraph compiles the training graph of a shape, with the fused kernels or the unfused gorgonia composition,
// scoring outputs as lossOpts says. With dropout 0 no masks are built. A graph whose node hashes collide is
// built again with another salt (graph.ErrHashCollision). Its fused ops take their scratch from arena and multiply
// with mul (graph.Params; nil: float32 BLAS).
func (m *Seq2Seq[T]) buildGraph(s shape, fused bool, lossOpts decoder.GraphLoss, arena *kernels.Arena[T], mul *kernels.Multiplier) (*trainGraph[T], error) {
	for salt := 0; ; salt++ {
		tg, err := m.buildSaltedGraph(s, fused, lossOpts, arena, mul, salt)
		if errors.Is(err, graph.ErrHashCollision) && salt < maxSalt {
			continue
		}
		return tg, err
	}
}

// maxSalt is the last salt buildGraph tries: a collision has odds of about 1 in 10⁴ per graph, so a second
// attempt practically always succeeds.
const maxSalt = 3

// buildSaltedGraph is buildGraph with the given graph.Params.Salt.
func (m *Seq2Seq[T]) buildSaltedGraph(s shape, fused bool, lossOpts decoder.GraphLoss, arena *kernels.Arena[T], mul *kernels.Multiplier, salt int) (*trainGraph[T], error) {
	tg := &trainGraph[T]{shape: s, params: graph.NewParams(arena),
		src: make([]int, s.rows*s.srcLen), srcLengths: make([]int, s.rows),
		tgtIn: make([]int, s.rows*s.tgtLen), tgtOut: make([]int, s.rows*s.tgtLen)}
	p := tg.params
	p.Salt, p.Multiplier = salt, mul
	// mask is the input node of a dropout mask of (steps, rows, width), time-major; dims is how the graph shapes
	// it (the output layer's reads the steps and rows as one dimension).
	var mask maskFunc = func(name string, steps, width int, dims ...int) *G.Node {
		if m.Cfg.Dropout == 0 {
			return nil
		}
		// The masks are refilled before every run and graphs run one at a time, so every cached graph takes its
		// masks from the shared arena: one buffer of the largest shape's size instead of one per graph.
		buf := p.Arena.Get(name, steps*s.rows*width)
		tg.masks = append(tg.masks, buf)
		tg.maskSteps = append(tg.maskSteps, steps)
		return p.Input(name, buf, dims...)
	}
	var guide *G.Node
	if lossOpts.GuideWeight > 0 {
		tg.guide = p.Arena.Get("guide", s.tgtLen*s.rows*s.srcLen) // refilled every run
		guide = p.Input("guide", tg.guide, s.tgtLen, s.rows, s.srcLen)
	}
	return m.net.graph(tg, m.Cfg, s, fused, lossOpts, mask, guide)
}

// graph builds the recurrent model's training graph into tg (see net.graph).
func (n rnnNet[T]) graph(tg *trainGraph[T], cfg ModelConfig, s shape, fused bool, lossOpts decoder.GraphLoss, mask maskFunc, guide *G.Node) (*trainGraph[T], error) {
	p := tg.params
	e, half, h := cfg.Emb, cfg.EncHidden, cfg.DecHidden
	encMasks := encoder.GraphMasks{Emb: mask("drop.src_emb", s.srcLen, e, s.srcLen, s.rows, e)}
	for l := 2; l <= cfg.Layers; l++ { // (nil masks without dropout)
		encMasks.Between = append(encMasks.Between, mask(fmt.Sprintf("drop.enc.l%d", l), s.srcLen, 2*half, s.srcLen, s.rows, 2*half))
	}
	enc := n.enc.Graph(p, &tg.src, &tg.srcLengths, s.rows, s.srcLen, encMasks, fused)
	steps := s.tgtLen * s.rows
	masks := decoder.GraphMasks{Emb: mask("drop.tgt_emb", s.tgtLen, e, s.tgtLen, s.rows, e),
		Out: mask("drop.out", s.tgtLen, h+2*half+e, steps, h+2*half+e)}
	for l := 2; l <= cfg.Layers; l++ {
		masks.Between = append(masks.Between, mask(fmt.Sprintf("drop.dec.l%d", l), s.tgtLen, h+2*half, s.tgtLen, s.rows, h+2*half))
	}
	if sampler, ok := n.dec.Attn.(align.Sampler); ok && sampler.Samples() {
		tg.noise = p.Arena.Get("attn.noise", s.tgtLen*s.rows*s.srcLen) // refilled every run, like the masks
		masks.Noise = p.Input("attn.noise", tg.noise, s.tgtLen, s.rows, s.srcLen)
	}
	masks.Guide = guide
	loss, guided, attention := n.dec.Graph(p, enc, &tg.srcLengths, &tg.tgtIn, &tg.tgtOut, s.rows, s.srcLen, s.tgtLen, masks, lossOpts, fused)
	tg.loss, tg.guided, tg.encOut, tg.attention = loss, guided, enc, attention
	return tg.compile()
}

// compile differentiates the graph's loss and makes the machine that runs it.
func (tg *trainGraph[T]) compile() (*trainGraph[T], error) {
	if err := tg.params.Differentiate(tg.loss); err != nil {
		return nil, err
	}
	tg.vm = G.NewTapeMachine(tg.params.Graph)
	// gorgonia sets a finalizer on every tape machine (it releases CUDA contexts; a no-op on the CPU). A finalizer
	// on an object inside a reference cycle stops the whole cycle from ever being collected, so an evicted graph
	// would keep its gigabyte of node values forever: drop the finalizer.
	runtime.SetFinalizer(tg.vm, nil)
	return tg, nil
}

// run feeds a batch to the graph, draws dropout masks from rng, and runs forward and backward; the gradients
// stay in the graph's nodes for the trainer's collect, and the losses for losses. With guided alignment, links(i)
// are the links of example i (data.Batch.Index); a nil links or a batch without Index has none.
func (tg *trainGraph[T]) run(b *data.Batch, dropout float64, rng rand.Source, links func(i int) []align.Link) error {
	tg.feed(b, links)
	drawNoise(tg.masks, tg.noise, dropout, rng)
	return tg.forwardBackward()
}

// feed copies a batch of the graph's shape into its inputs, and the gold links of guided alignment (links(i)
// for example i, data.Batch.Index; none when links is nil or the batch has no Index). The dropout masks and
// the noise are left to drawNoise or takeNoise.
func (tg *trainGraph[T]) feed(b *data.Batch, links func(i int) []align.Link) {
	if b.Rows != tg.rows || b.SrcLen != tg.srcLen || b.TgtLen != tg.tgtLen {
		panic(fmt.Sprintf("model: batch %d×%d×%d in graph %v", b.Rows, b.SrcLen, b.TgtLen, tg.shape))
	}
	copy(tg.src, b.Src)
	copy(tg.srcLengths, b.SrcLengths)
	copy(tg.tgtIn, b.TgtIn)
	copy(tg.tgtOut, b.TgtOut)
	if tg.guide != nil {
		clear(tg.guide)
		for r := 0; r < len(b.Index) && links != nil; r++ {
			align.FillGuide(tg.guide, tg.rows, tg.srcLen, tg.tgtLen, r, links(b.Index[r]))
		}
	}
}

// drawNoise fills the dropout masks, in order, then the Gumbel noise of an attention that samples (standard
// Gumbel draws −log(−log u), u uniform in (0, 1)), from rng. A *rand.PCG draws long masks on every core
// (fillDropoutMask) and the same values as the same PCG behind a *rand.Rand.
func drawNoise[T kernels.Float](masks [][]T, noise []T, dropout float64, rng rand.Source) {
	for _, buf := range masks {
		fillDropoutMask(buf, dropout, rng)
	}
	if len(noise) == 0 {
		return
	}
	uniform, ok := rng.(*rand.Rand)
	if !ok {
		uniform = rand.New(rng) // draws from rng itself: no buffer, so rng's stream goes on as one
	}
	for i := range noise {
		u := uniform.Float64()
		for u == 0 {
			u = uniform.Float64()
		}
		noise[i] = T(-math.Log(-math.Log(u)))
	}
}

// takeNoise fills the graph's dropout masks and noise with rows [lo, lo+tg.rows) of masks and noise drawn by
// drawNoise for a batch of rows rows (the same masks in the same order, each rows wide instead of tg.rows): the
// graph then runs its part of that batch with the values a graph of the whole batch would have drawn.
func (tg *trainGraph[T]) takeNoise(masks [][]T, noise []T, rows, lo int) {
	for k, buf := range tg.masks {
		copyRows(buf, masks[k], tg.maskSteps[k], rows, lo, tg.rows)
	}
	if tg.noise != nil {
		copyRows(tg.noise, noise, tg.tgtLen, rows, lo, tg.rows)
	}
}

// copyRows copies rows [lo, lo+n) of src, a time-major (steps, rows, width) array, into dst, (steps, n, width).
func copyRows[T kernels.Float](dst, src []T, steps, rows, lo, n int) {
	width := len(src) / (steps * rows)
	for t := range steps {
		copy(dst[t*n*width:(t+1)*n*width], src[(t*rows+lo)*width:(t*rows+lo+n)*width])
	}
}

// forwardBackward runs the graph forward and backward on what was fed to it. The gradients stay in the graph's
// nodes until the trainer's collect reads them; on an error the graph is reset at once.
func (tg *trainGraph[T]) forwardBackward() error {
	if err := tg.vm.RunAll(); err != nil {
		tg.vm.Reset()
		return fmt.Errorf("model: training step: %w", err)
	}
	return nil
}

// losses returns the last run's summed loss (the guided-alignment term included) and its guided-alignment
// cross-entropy alone (0 without).
func (tg *trainGraph[T]) losses() (loss, guided float64) {
	if tg.guided != nil {
		guided = float64(tg.guided.Value().Data().(T))
	}
	return float64(tg.loss.Value().Data().(T)), guided
}
