package model

import (
	"fmt"
	"github.com/attend-nmt/attend/align"
	"math/rand/v2"
	"testing"
)

// BenchmarkTrainStep times one optimizer step (forward, backward, clip, Adam) of the "small" model on a batch of
// 64 pairs of 16 source and 15 target words with Multi30k-sized vocabularies, and reports target tokens/s.
func BenchmarkTrainStep(b *testing.B) { benchmarkTrainStep(b, Default().Model) }

// BenchmarkTrainStepAttention is BenchmarkTrainStep with each other score function (window 3 for local).
func BenchmarkTrainStepAttention(b *testing.B) {
	for _, attention := range align.Names() {
		if attention == Default().Model.Attention {
			continue
		}
		b.Run(attention, func(b *testing.B) {
			cfg := Default().Model
			cfg.Attention = attention
			benchmarkTrainStep(b, cfg)
		})
	}
}

func benchmarkTrainStep(b *testing.B, cfg ModelConfig) {
	m := newTestModel[float32](b, cfg, 7882, 5898, 1)
	rng := rand.New(rand.NewPCG(1, 2))
	srcLens, tgtLens := make([]int, 64), make([]int, 64)
	for i := range srcLens {
		srcLens[i], tgtLens[i] = 16, 15
	}
	batch := randomBatch(rng, 7882, 5898, srcLens, tgtLens)
	tr := NewTrainer(m, 1e-3, 1, 2)
	if _, err := tr.Step(batch, rng); err != nil { // compile the graph outside the timing
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := tr.Step(batch, rng); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(batch.TgtTokens()*b.N)/b.Elapsed().Seconds(), "tgt_tok/s")
}

// BenchmarkTrainStepSelfAttention is BenchmarkTrainStep with one and two self-attention layers (4 heads) over the
// encoder states.
func BenchmarkTrainStepSelfAttention(b *testing.B) {
	for _, layers := range []int{1, 2} {
		b.Run(fmt.Sprintf("layers=%d", layers), func(b *testing.B) {
			cfg := Default().Model
			cfg.SelfAttentionLayers = layers
			benchmarkTrainStep(b, cfg)
		})
	}
}
