package transformer

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/attend-nmt/attend/align"
	"github.com/attend-nmt/attend/data"
	"github.com/attend-nmt/attend/graph"
	"github.com/attend-nmt/attend/kernels"
	"github.com/attend-nmt/attend/param"
	G "gorgonia.org/gorgonia"
)

// newTestModel builds a model of cfg in a fresh packed set with weights drawn by Init from seed, then every
// bias, layer-norm gain and bias shifted by noise, so that every term of the formulas is exercised.
func newTestModel[T kernels.Float](t testing.TB, cfg Config, seed uint64) (*Model[T], *param.Set[T]) {
	t.Helper()
	set := param.NewSet[T]()
	m, err := New(set, cfg)
	if err != nil {
		t.Fatal(err)
	}
	set.Pack()
	rng := rand.New(rand.NewPCG(seed, 5))
	m.Init(rng)
	for _, p := range set.List() {
		if len(p.Shape) == 1 {
			for i := range p.Data {
				p.Data[i] += T(0.2 * rng.NormFloat64())
			}
		}
	}
	return m, set
}

// testBatch is a batch in data.Batch's layout: ids time-major, pad past each row's length.
type testBatch struct {
	rows, srcLen, tgtLen      int
	src, srcLengths           []int
	tgtIn, tgtOut, tgtLengths []int
}

// newTestBatch draws a batch whose rows have the given source and target lengths (tgtIn starts with BOS, tgtOut
// ends with EOS).
func newTestBatch(rng *rand.Rand, cfg Config, srcLengths, tgtLengths []int, srcLen, tgtLen int) testBatch {
	rows := len(srcLengths)
	b := testBatch{rows: rows, srcLen: srcLen, tgtLen: tgtLen, srcLengths: srcLengths, tgtLengths: tgtLengths,
		src: make([]int, rows*srcLen), tgtIn: make([]int, rows*tgtLen), tgtOut: make([]int, rows*tgtLen)}
	word := func(v int) int { return 4 + rng.IntN(v-4) }
	for r := 0; r < rows; r++ {
		for i := 0; i < srcLengths[r]; i++ {
			b.src[i*rows+r] = word(cfg.SrcVocab)
		}
		for i := 0; i < tgtLengths[r]; i++ {
			b.tgtIn[i*rows+r] = data.BOSID
			if i > 0 {
				b.tgtIn[i*rows+r] = b.tgtOut[(i-1)*rows+r]
			}
			b.tgtOut[i*rows+r] = word(cfg.TgtVocab)
			if i == tgtLengths[r]-1 {
				b.tgtOut[i*rows+r] = data.EOSID
			}
		}
	}
	return b
}

// masks are fixed dropout masks by name, time-major (steps, rows, D), each value 0 or 2 (dropout 0.5).
type masks[T kernels.Float] struct {
	names []string
	bufs  map[string][]T
}

func newMasks[T kernels.Float]() *masks[T] { return &masks[T]{bufs: map[string][]T{}} }

// fn is the mask function of Graph: it draws (once per name) a mask and binds it as an input of p.
func (ms *masks[T]) fn(p *graph.Params[T], rng *rand.Rand, rows, d int) func(string, int) *G.Node {
	return func(name string, steps int) *G.Node {
		buf, ok := ms.bufs[name]
		if !ok {
			buf = make([]T, steps*rows*d)
			for i := range buf {
				if rng.IntN(2) == 1 {
					buf[i] = 2
				}
			}
			ms.bufs[name] = buf
		}
		ms.names = append(ms.names, name)
		return p.Input(name, buf, steps, rows, d)
	}
}

// enc and dec are the masks as the plain passes take them, in maskNodes' order.
func (ms *masks[T]) enc(layers int) [][]T {
	e := [][]T{ms.bufs["drop.tf.src"]}
	for l := 0; l < layers; l++ {
		e = append(e, ms.bufs[fmt.Sprintf("drop.tf.enc.%d.self", l)], ms.bufs[fmt.Sprintf("drop.tf.enc.%d.ff", l)])
	}
	return e
}

func (ms *masks[T]) dec(layers int) [][]T {
	e := [][]T{ms.bufs["drop.tf.tgt"]}
	for l := 0; l < layers; l++ {
		e = append(e, ms.bufs[fmt.Sprintf("drop.tf.dec.%d.self", l)], ms.bufs[fmt.Sprintf("drop.tf.dec.%d.cross", l)],
			ms.bufs[fmt.Sprintf("drop.tf.dec.%d.ff", l)])
	}
	return e
}

// plainLoss is the summed label-smoothed cross-entropy of the batch's real targets from the plain passes (with
// the masks; nil: no dropout) and the output layer written out: the loss Graph computes without a guide.
func plainLoss[T kernels.Float](m *Model[T], b testBatch, ms *masks[T], smoothing float64) float64 {
	loss, _ := plainGuidedLoss(m, b, ms, smoothing, nil)
	return loss
}

// testGuide is a guided-alignment gold (T, B, S) time-major and its weight.
type testGuide[T kernels.Float] struct {
	gold   []T
	weight float64
}

// plainGuidedLoss is plainLoss plus, with a guide, its weight times the guided-alignment cross-entropy of head
// AlignmentHead of block AttentionLayer's cross-attention, −Σ gold log(a + ε) written out here (ε of
// align.GuideLoss), which it returns too: the loss and the guided term Graph computes with the guide.
func plainGuidedLoss[T kernels.Float](m *Model[T], b testBatch, ms *masks[T], smoothing float64, g *testGuide[T]) (loss, guided float64) {
	d, v, n := m.Cfg.Dim, m.Cfg.TgtVocab, b.rows*b.tgtLen
	var em, dm [][]T
	if ms != nil {
		em, dm = ms.enc(m.Cfg.Layers), ms.dec(m.Cfg.Layers)
	}
	a := kernels.NewArena[T]()
	mem := make([]T, b.rows*b.srcLen*d)
	m.encodeForward(m.weightsOf(false, param.Data(m.encoderTensors())), b.src, b.srcLengths, b.rows, b.srcLen, em, mem, a, "enc")
	p := m.decodeForward(m.weightsOf(true, param.Data(m.decoderTensors())), mem, b.srcLengths, b.srcLen, b.tgtIn, b.rows, b.tgtLen, dm, a, "dec")
	out := make([]T, n*d)
	transpose(out, p.final.H, b.rows, b.tgtLen, d)
	logits := make([]T, n*v)
	m.logits(out, n, logits)
	loss = xentOf(logits, b.tgtOut, v, smoothing)
	if g == nil {
		return loss, 0
	}
	c, s2, j := p.blocks[m.Cfg.AttentionLayer].Cross, b.tgtLen*b.srcLen, m.Cfg.AlignmentHead-1
	for t := 0; t < b.tgtLen; t++ {
		for r := 0; r < b.rows; r++ {
			for i := 0; i < b.srcLen; i++ {
				a := float64(c.Att[(r*m.Cfg.Heads+j)*s2+t*b.srcLen+i]) // (B, NH, T, S)
				guided -= float64(g.gold[(t*b.rows+r)*b.srcLen+i]) * math.Log(a+align.GuideEpsilon)
			}
		}
	}
	return loss + g.weight*guided, guided
}

// xentOf is the summed cross-entropy of the rows of logits (n, V) whose target is not pad.
func xentOf[T kernels.Float](logits []T, targets []int, v int, smoothing float64) float64 {
	var loss float64
	row := make([]T, v)
	for r, y := range targets {
		if y == data.PadID {
			continue
		}
		copy(row, logits[r*v:(r+1)*v])
		loss += kernels.XentRow(row, y, smoothing)
	}
	return loss
}

// graphRun builds the Graph loss of the batch with the masks (nil: no dropout), runs it forward and backward
// once, and returns the loss, the gradients and the graph's inputs (which a test may change and run again).
type graphRun[T kernels.Float] struct {
	vm                             G.VM
	loss, guided                   *G.Node // guided: the guided-alignment term, nil without a guide
	p                              *graph.Params[T]
	src, srcLengths, tgtIn, tgtOut []int
}

func newGraphRun[T kernels.Float](t testing.TB, m *Model[T], b testBatch, ms *masks[T], rng *rand.Rand, smoothing float64) *graphRun[T] {
	t.Helper()
	return newGuidedGraphRun(t, m, b, ms, rng, smoothing, nil)
}

// newGuidedGraphRun is newGraphRun with guided alignment toward gd (nil: none).
func newGuidedGraphRun[T kernels.Float](t testing.TB, m *Model[T], b testBatch, ms *masks[T], rng *rand.Rand, smoothing float64, gd *testGuide[T]) *graphRun[T] {
	t.Helper()
	return newBuiltGraphRun(t, m, m.Graph, b, ms, rng, smoothing, gd)
}

// graphBuilder is Model.Graph or Model.UnfusedGraph, of one model.
type graphBuilder[T kernels.Float] func(p *graph.Params[T], src, srcLengths, tgtIn, tgtOut *[]int, rows, srcLen, tgtLen int,
	mask func(name string, steps int) *G.Node, smoothing float64, pad int, guide *G.Node, guideWeight float64) (loss, guided *G.Node)

// newBuiltGraphRun is newGuidedGraphRun with the loss built by build (m.Graph or m.UnfusedGraph).
func newBuiltGraphRun[T kernels.Float](t testing.TB, m *Model[T], build graphBuilder[T], b testBatch, ms *masks[T], rng *rand.Rand, smoothing float64, gd *testGuide[T]) *graphRun[T] {
	t.Helper()
	g := &graphRun[T]{p: graph.NewParams[T](nil), src: append([]int(nil), b.src...), srcLengths: append([]int(nil), b.srcLengths...),
		tgtIn: append([]int(nil), b.tgtIn...), tgtOut: append([]int(nil), b.tgtOut...)}
	mask := func(string, int) *G.Node { return nil }
	if ms != nil {
		mask = ms.fn(g.p, rng, b.rows, m.Cfg.Dim)
	}
	var guide *G.Node
	var weight float64
	if gd != nil {
		guide, weight = g.p.Input("guide", gd.gold, b.tgtLen, b.rows, b.srcLen), gd.weight
	}
	g.loss, g.guided = build(g.p, &g.src, &g.srcLengths, &g.tgtIn, &g.tgtOut, b.rows, b.srcLen, b.tgtLen, mask, smoothing, data.PadID, guide, weight)
	if err := g.p.Differentiate(g.loss); err != nil {
		t.Fatal(err)
	}
	g.vm = G.NewTapeMachine(g.p.Graph)
	return g
}

// run runs the graph and returns the loss, setting grads to its gradients (nil: not read).
func (g *graphRun[T]) run(t testing.TB, grads *param.Set[T]) float64 {
	t.Helper()
	defer g.vm.Reset()
	if err := g.vm.RunAll(); err != nil {
		t.Fatal(err)
	}
	if grads != nil {
		graph.SumGrads(grads, 1, []*graph.Params[T]{g.p}, 1<<15, nil)
	}
	return float64(g.loss.Value().Data().(T))
}

// widen converts to float64.
func widen[T kernels.Float](x []T) []float64 {
	out := make([]float64, len(x))
	for i, v := range x {
		out[i] = float64(v)
	}
	return out
}

// finite fails the test on a NaN or infinite value.
func finite[T kernels.Float](t testing.TB, what string, x []T) {
	t.Helper()
	for i, v := range x {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			t.Fatalf("%s[%d] is %g", what, i, v)
		}
	}
}
