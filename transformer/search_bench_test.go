package transformer

import (
	"testing"

	"github.com/attend-nmt/attend/decoder"
)

// benchConfig is a small Transformer for the search benchmarks (width 256, 4 heads, 3 blocks) over a target
// vocabulary of 6,000 words, as the recurrent decoder's benchmarks use; the batch is 16 sentences of 8 to 19
// words decoded to 12 words (random weights rarely choose </s>, so most rows take every step).
var benchConfig = Config{SrcVocab: 6000, TgtVocab: 6000, Dim: 256, Heads: 4, FF: 1024, Layers: 3, Positions: Sinusoidal}

// benchSearch is the benchmarks' model and memory, drawn from seed 1.
func benchSearch(b *testing.B) (*Model[float32], *Memory[float32]) {
	b.Helper()
	m, _ := newTestModel[float32](b, benchConfig, 1)
	lengths := make([]int, 16)
	for r := range lengths {
		lengths[r] = 8 + r%12
	}
	return m, newTestMemory[float32](lengths, 19, benchConfig.Dim, 1)
}

// BenchmarkSearch decodes the benchmarks' batch greedily and with a beam of 5.
func BenchmarkSearch(b *testing.B) {
	m, mem := benchSearch(b)
	b.Run("greedy", func(b *testing.B) {
		for b.Loop() {
			m.Greedy(mem, 1, 2, 12)
		}
	})
	b.Run("beam5", func(b *testing.B) {
		for b.Loop() {
			if _, err := m.Beam(mem, 1, 2, decoder.BeamOptions{Width: 5, MaxLen: 12}); err != nil {
				b.Fatal(err)
			}
		}
	})
}
