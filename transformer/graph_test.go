package transformer

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/attend-nmt/attend/align"
	"github.com/attend-nmt/attend/internal/gradcheck"
	"github.com/attend-nmt/attend/kernels"
)

// Tolerances of the gradient tests.
const (
	// gradTol is the relative gap allowed between Graph's gradients and float64 central differences of the
	// plain loss (gradcheck's floor of 1e-3 keeps the rounding noise of a loss of order 10 well below it).
	gradTol = 1e-5
	// grad32Tol is the gap allowed between float32 and float64 gradients (scaled by max(1, |gradient|)).
	grad32Tol = 5e-5
)

// gradConfig is the small model of the gradient tests: 2 layers, 2 heads, with the output layer tied or not
// and learned (fewer than the source's positions, so the last is reused) or sinusoidal positions.
func gradConfig(tied bool, positions string) Config {
	return Config{SrcVocab: 11, TgtVocab: 13, Dim: 8, Heads: 2, FF: 12, Layers: 2, Positions: positions, MaxPositions: 4, TieOutput: tied}
}

// gradBatch has rows of different source and target lengths, padded.
func gradBatch(rng *rand.Rand, cfg Config) testBatch {
	return newTestBatch(rng, cfg, []int{5, 3, 2}, []int{4, 2, 3}, 5, 4)
}

// gradGuide is a guided-alignment gold for gradBatch's rows (source lengths 5, 3, 2; targets 4, 2, 3): a target
// word linked to two source words, words without links, and a row of one link; weight 0.5.
func gradGuide[T kernels.Float](b testBatch) *testGuide[T] {
	gold := make([]T, b.tgtLen*b.rows*b.srcLen)
	for r, links := range [][]align.Link{
		{{Src: 0, Tgt: 0}, {Src: 2, Tgt: 0}, {Src: 1, Tgt: 1}, {Src: 4, Tgt: 3}},
		{{Src: 2, Tgt: 1}},
		{{Src: 1, Tgt: 0}, {Src: 0, Tgt: 2}},
	} {
		align.FillGuide(gold, b.rows, b.srcLen, b.tgtLen, r, links)
	}
	return &testGuide[T]{gold: gold, weight: 0.5}
}

// TestGraphGradientsMatchFiniteDifferences checks Graph's loss against the plain passes' and its gradients
// against float64 central differences of the plain loss, with dropout, the output layer tied or not, sinusoidal
// or learned positions, and guided alignment (on the second head of the first decoder block, so that its
// gradient also crosses the block above on its way down) or none.
func TestGraphGradientsMatchFiniteDifferences(t *testing.T) {
	for _, c := range []struct {
		tied      bool
		positions string
		guided    bool
	}{{false, Sinusoidal, false}, {false, Learned, false}, {true, Sinusoidal, false}, {true, Learned, false}, {false, Sinusoidal, true}, {true, Learned, true}} {
		t.Run(fmt.Sprintf("tied=%v %s guided=%v", c.tied, c.positions, c.guided), func(t *testing.T) {
			cfg := gradConfig(c.tied, c.positions)
			var gd *testGuide[float64]
			rng := rand.New(rand.NewPCG(7, 7))
			b := gradBatch(rng, cfg)
			if c.guided {
				cfg.AttentionLayer, cfg.AlignmentHead = 0, 2
				gd = gradGuide[float64](b)
			}
			m, set := newTestModel[float64](t, cfg, 3)
			ms := newMasks[float64]()
			const smoothing = 0.1
			g := newGuidedGraphRun(t, m, b, ms, rng, smoothing, gd)
			if len(ms.names) != 1+2*cfg.Layers+1+3*cfg.Layers {
				t.Fatalf("Graph asked for masks %v", ms.names)
			}
			grads := set.ZerosLike()
			loss := g.run(t, grads)
			want, wantGuided := plainGuidedLoss(m, b, ms, smoothing, gd)
			gradcheck.Close(t, "Graph loss against the plain loss", []float64{loss}, []float64{want}, 1e-12)
			if c.guided {
				if wantGuided < 1 {
					t.Fatalf("guided term %g: the guide does not weigh", wantGuided)
				}
				gradcheck.Close(t, "Graph guided term against the plain one", []float64{g.guided.Value().Data().(float64)}, []float64{wantGuided}, 1e-12)
			} else if g.guided != nil {
				t.Fatal("a guided term without a guide")
			}
			var tensors []gradcheck.Tensor
			for _, p := range set.List() {
				tensors = append(tensors, gradcheck.Tensor{Name: p.Name, X: p.Data, Grad: grads.Get(p.Name).Data})
			}
			gradcheck.Check(t, func() float64 { l, _ := plainGuidedLoss(m, b, ms, smoothing, gd); return l }, tensors, 12, rng, gradTol)
		})
	}
}

// TestGraphGradientsFloat32MatchFloat64 checks that Graph's float32 loss and gradients follow its float64 ones,
// the output layer tied or not, with guided alignment too.
func TestGraphGradientsFloat32MatchFloat64(t *testing.T) {
	for _, c := range []struct{ tied, guided bool }{{false, false}, {true, false}, {true, true}} {
		t.Run(fmt.Sprintf("tied=%v guided=%v", c.tied, c.guided), func(t *testing.T) {
			cfg := gradConfig(c.tied, Learned)
			b := gradBatch(rand.New(rand.NewPCG(7, 7)), cfg)
			var gd64 *testGuide[float64]
			var gd32 *testGuide[float32]
			if c.guided {
				cfg.AlignmentHead = 1
				gd64, gd32 = gradGuide[float64](b), gradGuide[float32](b)
			}
			m64, set64 := newTestModel[float64](t, cfg, 3)
			m32, set32 := newTestModel[float32](t, cfg, 3)
			ms64, ms32 := newMasks[float64](), newMasks[float32]()
			g64 := newGuidedGraphRun(t, m64, b, ms64, rand.New(rand.NewPCG(1, 1)), 0.1, gd64)
			g32 := newGuidedGraphRun(t, m32, b, ms32, rand.New(rand.NewPCG(1, 1)), 0.1, gd32)
			grads64, grads32 := set64.ZerosLike(), set32.ZerosLike()
			loss64, loss32 := g64.run(t, grads64), g32.run(t, grads32)
			gradcheck.Close(t, "loss", []float64{loss32}, []float64{loss64}, 1e-5)
			for _, p := range set64.List() {
				gradcheck.Close(t, p.Name, widen(grads32.Get(p.Name).Data), grads64.Get(p.Name).Data, grad32Tol)
			}
		})
	}
}
