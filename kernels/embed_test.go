package kernels

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/attend-nmt/attend/internal/gradcheck"
)

// TestEmbedBackwardIsEmbedsAdjoint checks Embed against the rows it copies, and EmbedBackward as its adjoint:
// ⟨EmbedBackward(dOut), table⟩ = ⟨dOut, Embed(table)⟩, with an id repeated so that rows add up.
func TestEmbedBackwardIsEmbedsAdjoint(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	const vocab, width = 7, 3
	ids := []int{4, 0, 4, 6, 2}
	table, dOut := gradcheck.Random(rng, vocab*width, 1), gradcheck.Random(rng, len(ids)*width, 1)
	out, dTable := make([]float64, len(ids)*width), make([]float64, len(table))
	Embed(table, ids, width, out)
	for i, id := range ids {
		for j := 0; j < width; j++ {
			if out[i*width+j] != table[id*width+j] {
				t.Fatalf("row %d value %d: %g, table row %d has %g", i, j, out[i*width+j], id, table[id*width+j])
			}
		}
	}
	EmbedBackward(dTable, ids, width, dOut)
	if a, b := gradcheck.Dot(dTable, table), gradcheck.Dot(dOut, out); math.Abs(a-b) > 1e-12 {
		t.Fatalf("⟨EmbedBackward(dOut), table⟩ = %g, ⟨dOut, Embed(table)⟩ = %g", a, b)
	}
}
