package transformer

import (
	"math/rand/v2"
	"testing"
)

// BenchmarkGraph is one training step (forward and backward through Graph, with dropout masks) at the small
// config's sizes over a Multi30k-like batch: D=256, 4 heads, F=1024, 3 layers, 64 sentences of about 22 words.
func BenchmarkGraph(b *testing.B) {
	cfg := Config{SrcVocab: 6000, TgtVocab: 6000, Dim: 256, Heads: 4, FF: 1024, Layers: 3, Positions: Sinusoidal, TieOutput: true}
	rng := rand.New(rand.NewPCG(1, 1))
	srcLengths, tgtLengths := make([]int, 64), make([]int, 64)
	for r := range srcLengths {
		srcLengths[r], tgtLengths[r] = 14+rng.IntN(9), 15+rng.IntN(9)
	}
	batch := newTestBatch(rng, cfg, srcLengths, tgtLengths, 22, 23)
	m, set := newTestModel[float32](b, cfg, 1)
	g := newGraphRun(b, m, batch, newMasks[float32](), rng, 0.1)
	grads := set.ZerosLike()
	for b.Loop() {
		g.run(b, grads)
	}
}
