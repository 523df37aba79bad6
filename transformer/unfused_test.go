package transformer

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/attend-nmt/attend/internal/gradcheck"
)

// unfusedTol is the relative gap allowed between Graph's and UnfusedGraph's float64 loss and gradients: the
// same formulas summed in other orders, so rounding apart.
const unfusedTol = 1e-10

// relGap is max_i |got_i − want_i| / max(max_i |want_i|, 1e-6): the worst gap of a tensor relative to its
// scale (the floor keeps a gradient of 0 from dividing rounding noise by 0).
func relGap(got, want []float64) float64 {
	var gap, scale float64
	for i := range want {
		gap = math.Max(gap, math.Abs(got[i]-want[i]))
		scale = math.Max(scale, math.Abs(want[i]))
	}
	return gap / math.Max(scale, 1e-6)
}

// TestUnfusedGraphMatchesGraph holds Graph, the fused stacks with their hand-written backward passes, to
// UnfusedGraph, their composition from gorgonia's ops differentiated by gorgonia, in float64: the loss, the
// guided term and every parameter's gradient, in the cases of TestGraphGradientsMatchFiniteDifferences
// (dropout on, the output layer tied or not, sinusoidal or learned positions (fewer than the source's, so the
// last is reused), guided alignment on head 2 of block 0 or head 1 of block 1, or none). UnfusedGraph's loss is
// also held to the plain passes'.
func TestUnfusedGraphMatchesGraph(t *testing.T) {
	for _, c := range []struct {
		tied        bool
		positions   string
		block, head int // of guided alignment; head 0: none
	}{{false, Sinusoidal, 0, 0}, {false, Learned, 0, 0}, {true, Sinusoidal, 0, 0}, {true, Learned, 0, 0},
		{false, Sinusoidal, 0, 2}, {true, Learned, 0, 2}, {false, Learned, 1, 1}} {
		t.Run(fmt.Sprintf("tied=%v %s guided=%d.%d", c.tied, c.positions, c.block, c.head), func(t *testing.T) {
			cfg := gradConfig(c.tied, c.positions)
			rng := rand.New(rand.NewPCG(7, 7))
			b := gradBatch(rng, cfg)
			var gd *testGuide[float64]
			if c.head > 0 {
				cfg.AttentionLayer, cfg.AlignmentHead = c.block, c.head
				gd = gradGuide[float64](b)
			}
			m, set := newTestModel[float64](t, cfg, 3)
			ms := newMasks[float64]()
			const smoothing = 0.1
			fused := newBuiltGraphRun(t, m, m.Graph, b, ms, rng, smoothing, gd)
			fusedNames := ms.names
			ms.names = nil
			unfused := newBuiltGraphRun(t, m, m.UnfusedGraph, b, ms, rng, smoothing, gd) // the masks fused drew
			if fmt.Sprint(ms.names) != fmt.Sprint(fusedNames) {
				t.Fatalf("UnfusedGraph asked for masks %v, Graph for %v", ms.names, fusedNames)
			}
			fusedGrads, unfusedGrads := set.ZerosLike(), set.ZerosLike()
			fusedLoss, unfusedLoss := fused.run(t, fusedGrads), unfused.run(t, unfusedGrads)
			want, wantGuided := plainGuidedLoss(m, b, ms, smoothing, gd)
			gradcheck.Close(t, "UnfusedGraph loss against the plain loss", []float64{unfusedLoss}, []float64{want}, 1e-12)
			worst := relGap([]float64{fusedLoss}, []float64{unfusedLoss})
			if worst > unfusedTol {
				t.Errorf("loss: Graph %.15g, UnfusedGraph %.15g (relative gap %.2g)", fusedLoss, unfusedLoss, worst)
			}
			if gd != nil {
				if wantGuided < 1 {
					t.Fatalf("guided term %g: the guide does not weigh", wantGuided)
				}
				f, u := fused.guided.Value().Data().(float64), unfused.guided.Value().Data().(float64)
				gradcheck.Close(t, "UnfusedGraph guided term against the plain one", []float64{u}, []float64{wantGuided}, 1e-12)
				if gap := relGap([]float64{f}, []float64{u}); gap > unfusedTol {
					t.Errorf("guided term: Graph %.15g, UnfusedGraph %.15g (relative gap %.2g)", f, u, gap)
				}
			} else if unfused.guided != nil {
				t.Fatal("a guided term without a guide")
			}
			var keyBias float64 // the largest |gradient| of a key bias in UnfusedGraph
			for _, p := range set.List() {
				got, want := fusedGrads.Get(p.Name).Data, unfusedGrads.Get(p.Name).Data
				if strings.HasSuffix(p.Name, ".b_k") {
					// A key bias's gradient is exactly 0 (it adds the same q·b_K to each of a query's scores), which
					// the fused backward pass writes as such (attention.go); autodiff gives its rounding noise.
					for i, g := range want {
						keyBias = math.Max(keyBias, math.Abs(g))
						if got[i] != 0 || math.Abs(g) > 1e-12 {
							t.Errorf("%s[%d]: Graph's gradient %g, UnfusedGraph's %g; want 0 and rounding", p.Name, i, got[i], g)
						}
					}
					continue
				}
				gap := relGap(got, want)
				worst = math.Max(worst, gap)
				if gap > unfusedTol {
					t.Errorf("%s: Graph's gradient differs from UnfusedGraph's by %.2g of its scale", p.Name, gap)
				}
			}
			t.Logf("loss %.6f; worst relative gap of the loss and the gradients %.2g; key biases' gradients within %.2g of 0", unfusedLoss, worst, keyBias)
		})
	}
}

// TestUnfusedGraphGradientsMatchFiniteDifferences checks UnfusedGraph's gradients against float64 central
// differences of its own loss, so that the reference is right on its own: the output layer tied, learned
// positions (the last reused), dropout, guided alignment on head 2 of block 0.
func TestUnfusedGraphGradientsMatchFiniteDifferences(t *testing.T) {
	cfg := gradConfig(true, Learned)
	rng := rand.New(rand.NewPCG(7, 7))
	b := gradBatch(rng, cfg)
	cfg.AttentionLayer, cfg.AlignmentHead = 0, 2
	m, set := newTestModel[float64](t, cfg, 3)
	g := newBuiltGraphRun(t, m, m.UnfusedGraph, b, newMasks[float64](), rng, 0.1, gradGuide[float64](b))
	grads := set.ZerosLike()
	g.run(t, grads)
	var tensors []gradcheck.Tensor
	for _, p := range set.List() {
		tensors = append(tensors, gradcheck.Tensor{Name: p.Name, X: p.Data, Grad: grads.Get(p.Name).Data})
	}
	gradcheck.Check(t, func() float64 { return g.run(t, nil) }, tensors, 12, rng, gradTol)
}
