package model

import (
	"github.com/attend-nmt/attend/dist"
	"math/rand/v2"
	"runtime"
	"testing"
)

// TestEvictedGraphsAreFreed cycles a one-graph cache through three batch shapes, three times: the live heap must
// not grow from round to round (gorgonia's tape-machine finalizer used to pin every evicted graph).
func TestEvictedGraphsAreFreed(t *testing.T) {
	m := newTestModel[float32](t, Small().Model, 500, 3000, 1)
	tr := NewTrainer(m, 1e-3, 1, 1)
	heapAfterRound := make([]float64, 3)
	for round := range heapAfterRound {
		for _, n := range []int{6, 8, 10} {
			rng := rand.New(rand.NewPCG(1, 2))
			srcLens, tgtLens := make([]int, 32), make([]int, 32)
			for j := range srcLens {
				srcLens[j], tgtLens[j] = n, n-1
			}
			if _, err := tr.Step(randomBatch(rng, 500, 3000, srcLens, tgtLens), rng, dist.Single{}); err != nil {
				t.Fatal(err)
			}
		}
		var ms runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&ms)
		heapAfterRound[round] = float64(ms.HeapAlloc) / 1e6
	}
	if heapAfterRound[2] > 1.2*heapAfterRound[0] {
		t.Fatalf("live heap after each round: %.0f MB, %.0f MB, %.0f MB: evicted graphs are not freed",
			heapAfterRound[0], heapAfterRound[1], heapAfterRound[2])
	}
}
