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
	"github.com/attend-nmt/attend/param"
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
	noise           []T                  // Gumbel noise for an attention that samples (nil otherwise; in the arena)
	guide           []T                  // guided alignment's gold (tgtLen, rows, srcLen); nil without (in the arena)
	guided          *G.Node              // the guided-alignment cross-entropy, nil without
	encOut          *encoder.GraphOutput // kept for the tests that compare with the plain-Go forward
	attention       []*G.Node
	lastUse         int
}

// buildGraph compiles the training graph of a shape, with the fused kernels or the unfused gorgonia composition,
// scoring outputs as lossOpts says. With dropout 0 no masks are built. A graph whose node hashes collide is
// built again with another salt (graph.ErrHashCollision).
func (m *Seq2Seq[T]) buildGraph(s shape, fused bool, lossOpts decoder.GraphLoss, arena *kernels.Arena[T]) (*trainGraph[T], error) {
	for salt := 0; ; salt++ {
		tg, err := m.buildSaltedGraph(s, fused, lossOpts, arena, salt)
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
func (m *Seq2Seq[T]) buildSaltedGraph(s shape, fused bool, lossOpts decoder.GraphLoss, arena *kernels.Arena[T], salt int) (*trainGraph[T], error) {
	tg := &trainGraph[T]{shape: s, params: graph.NewParams(arena),
		src: make([]int, s.rows*s.srcLen), srcLengths: make([]int, s.rows),
		tgtIn: make([]int, s.rows*s.tgtLen), tgtOut: make([]int, s.rows*s.tgtLen)}
	p := tg.params
	p.Salt = salt
	mask := func(name string, dims ...int) *G.Node {
		if m.Cfg.Dropout == 0 {
			return nil
		}
		n := 1
		for _, d := range dims {
			n *= d
		}
		// The masks are refilled before every run and graphs run one at a time, so every cached graph takes its
		// masks from the shared arena: one buffer of the largest shape's size instead of one per graph.
		buf := p.Arena.Get(name, n)
		tg.masks = append(tg.masks, buf)
		return p.Input(name, buf, dims...)
	}
	e, half, h := m.Cfg.Emb, m.Cfg.EncHidden, m.Cfg.DecHidden
	encMasks := encoder.GraphMasks{Emb: mask("drop.src_emb", s.srcLen, s.rows, e)}
	for l := 2; l <= m.Cfg.Layers; l++ { // (nil masks without dropout)
		encMasks.Between = append(encMasks.Between, mask(fmt.Sprintf("drop.enc.l%d", l), s.srcLen, s.rows, 2*half))
	}
	enc := m.Encoder.Graph(p, &tg.src, &tg.srcLengths, s.rows, s.srcLen, encMasks, fused)
	steps := s.tgtLen * s.rows
	masks := decoder.GraphMasks{Emb: mask("drop.tgt_emb", s.tgtLen, s.rows, e),
		Out: mask("drop.out", steps, h+2*half+e)}
	for l := 2; l <= m.Cfg.Layers; l++ {
		masks.Between = append(masks.Between, mask(fmt.Sprintf("drop.dec.l%d", l), s.tgtLen, s.rows, h+2*half))
	}
	if sampler, ok := m.Decoder.Attn.(align.Sampler); ok && sampler.Samples() {
		tg.noise = p.Arena.Get("attn.noise", s.tgtLen*s.rows*s.srcLen) // refilled every run, like the masks
		masks.Noise = p.Input("attn.noise", tg.noise, s.tgtLen, s.rows, s.srcLen)
	}
	if lossOpts.GuideWeight > 0 {
		tg.guide = p.Arena.Get("guide", s.tgtLen*s.rows*s.srcLen) // refilled every run
		masks.Guide = p.Input("guide", tg.guide, s.tgtLen, s.rows, s.srcLen)
	}
	loss, guided, attention := m.Decoder.Graph(p, enc, &tg.srcLengths, &tg.tgtIn, &tg.tgtOut, s.rows, s.srcLen, s.tgtLen, masks, lossOpts, fused)
	tg.loss, tg.guided, tg.encOut, tg.attention = loss, guided, enc, attention
	if err := p.Differentiate(loss); err != nil {
		return nil, err
	}
	tg.vm = G.NewTapeMachine(p.Graph)
	// gorgonia sets a finalizer on every tape machine (it releases CUDA contexts; a no-op on the CPU). A finalizer
	// on an object inside a reference cycle stops the whole cycle from ever being collected, so an evicted graph
	// would keep its gigabyte of node values forever: drop the finalizer.
	runtime.SetFinalizer(tg.vm, nil)
	return tg, nil
}

// run feeds a batch to the graph, draws dropout masks from rng, runs forward and backward, and adds the gradient
// of the summed loss, times scale, into grads. It returns the summed loss (the guided-alignment term included)
// and the guided-alignment cross-entropy alone (0 without). With guided alignment, links(i) are the links of
// example i (data.Batch.Index); a nil links or a batch without Index has none.
func (tg *trainGraph[T]) run(b *data.Batch, dropout float64, rng *rand.Rand, grads *param.Set[T], scale T, links func(i int) []align.Link) (loss, guided float64, err error) {
	if b.Rows != tg.rows || b.SrcLen != tg.srcLen || b.TgtLen != tg.tgtLen {
		panic(fmt.Sprintf("model: batch %d×%d×%d in graph %v", b.Rows, b.SrcLen, b.TgtLen, tg.shape))
	}
	copy(tg.src, b.Src)
	copy(tg.srcLengths, b.SrcLengths)
	copy(tg.tgtIn, b.TgtIn)
	copy(tg.tgtOut, b.TgtOut)
	for _, buf := range tg.masks {
		fillDropoutMask(buf, dropout, rng)
	}
	// Standard Gumbel draws −log(−log u), u uniform in (0, 1).
	for i := range tg.noise {
		u := rng.Float64()
		for u == 0 {
			u = rng.Float64()
		}
		tg.noise[i] = T(-math.Log(-math.Log(u)))
	}
	if tg.guide != nil {
		clear(tg.guide)
		for r := 0; r < len(b.Index) && links != nil; r++ {
			align.FillGuide(tg.guide, tg.rows, tg.srcLen, tg.tgtLen, r, links(b.Index[r]))
		}
	}
	defer tg.vm.Reset()
	if err := tg.vm.RunAll(); err != nil {
		return 0, 0, fmt.Errorf("model: training step: %w", err)
	}
	tg.params.AddGrads(grads, scale)
	if tg.guided != nil {
		guided = float64(tg.guided.Value().Data().(T))
	}
	return float64(tg.loss.Value().Data().(T)), guided, nil
}

// fillDropoutMask sets each value of mask to 0 with probability p and to 1/(1-p) otherwise (inverted dropout).
// Each 64-bit draw of rng decides two values, one per 32-bit half (u < p·2³²): half the draws of one
// rng.Float64 per value, and no conversion, for the hundreds of thousands of values a step masks.
func fillDropoutMask[T kernels.Float](mask []T, p float64, rng *rand.Rand) {
	keep := T(1 / (1 - p))
	threshold := uint64(p * (1 << 32))
	for i := 0; i < len(mask); i += 2 {
		u := rng.Uint64()
		a, b := keep, keep // selected, not branched on: the outcomes are random, so a branch mispredicts
		if u&(1<<32-1) < threshold {
			a = 0
		}
		if u>>32 < threshold {
			b = 0
		}
		mask[i] = a
		if i+1 < len(mask) {
			mask[i+1] = b
		}
	}
}
