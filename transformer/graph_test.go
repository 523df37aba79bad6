package transformer

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/attend-nmt/attend/internal/gradcheck"
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

func TestGraphGradientsMatchFiniteDifferences(t *testing.T) {
	for _, tied := range []bool{false, true} {
		for _, positions := range []string{Sinusoidal, Learned} {
			t.Run(fmt.Sprintf("tied=%v %s", tied, positions), func(t *testing.T) {
				cfg := gradConfig(tied, positions)
				rng := rand.New(rand.NewPCG(7, 7))
				m, set := newTestModel[float64](t, cfg, 3)
				b := gradBatch(rng, cfg)
				ms := newMasks[float64]()
				const smoothing = 0.1
				g := newGraphRun(t, m, b, ms, rng, smoothing)
				if len(ms.names) != 1+2*cfg.Layers+1+3*cfg.Layers {
					t.Fatalf("Graph asked for masks %v", ms.names)
				}
				grads := set.ZerosLike()
				loss := g.run(t, grads)
				want := plainLoss(m, b, ms, smoothing)
				gradcheck.Close(t, "Graph loss against the plain loss", []float64{loss}, []float64{want}, 1e-12)
				var tensors []gradcheck.Tensor
				for _, p := range set.List() {
					tensors = append(tensors, gradcheck.Tensor{Name: p.Name, X: p.Data, Grad: grads.Get(p.Name).Data})
				}
				gradcheck.Check(t, func() float64 { return plainLoss(m, b, ms, smoothing) }, tensors, 12, rng, gradTol)
			})
		}
	}
}

func TestGraphGradientsFloat32MatchFloat64(t *testing.T) {
	for _, tied := range []bool{false, true} {
		t.Run(fmt.Sprintf("tied=%v", tied), func(t *testing.T) {
			cfg := gradConfig(tied, Learned)
			b := gradBatch(rand.New(rand.NewPCG(7, 7)), cfg)
			m64, set64 := newTestModel[float64](t, cfg, 3)
			m32, set32 := newTestModel[float32](t, cfg, 3)
			ms64, ms32 := newMasks[float64](), newMasks[float32]()
			g64 := newGraphRun(t, m64, b, ms64, rand.New(rand.NewPCG(1, 1)), 0.1)
			g32 := newGraphRun(t, m32, b, ms32, rand.New(rand.NewPCG(1, 1)), 0.1)
			grads64, grads32 := set64.ZerosLike(), set32.ZerosLike()
			loss64, loss32 := g64.run(t, grads64), g32.run(t, grads32)
			gradcheck.Close(t, "loss", []float64{loss32}, []float64{loss64}, 1e-5)
			for _, p := range set64.List() {
				gradcheck.Close(t, p.Name, widen(grads32.Get(p.Name).Data), grads64.Get(p.Name).Data, grad32Tol)
			}
		})
	}
}
