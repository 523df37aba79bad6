package model

import (
	"fmt"
	"math"
	"testing"

	"github.com/attend-nmt/attend/data"
	"github.com/attend-nmt/attend/decoder"
)

// TestGreedyIsIndependentOfBatching decodes sentences of different lengths as one batch — from which finished
// rows drop out as they end — and one by one, and requires the same words and the same attention.
func TestGreedyIsIndependentOfBatching(t *testing.T) {
	cfg := ModelConfig{Emb: 8, EncHidden: 8, DecHidden: 12, AttnDim: 6, Cell: "lstm", Attention: "mlp"}
	examples := randomSources(8, 1, 7)
	together := data.MakeBatches(examples, data.BatchOptions{BatchSize: len(examples)}, nil)[0]
	// Pick the first random model whose rows stop after at least three different numbers of steps, so that the
	// batch shrinks more than once.
	var m *Seq2Seq[float64]
	var hyps []decoder.Hypothesis
	for seed := uint64(1); seed < 200; seed++ {
		m = newTestModel[float64](t, cfg, 20, 6, seed) // a small target vocabulary: </s> comes up often
		hyps = m.Greedy(&together, 12)
		steps := map[int]bool{}
		for _, h := range hyps {
			steps[len(h.Attention)] = true
		}
		if len(steps) >= 3 {
			break
		}
	}
	lengths := map[int]bool{}
	for r, h := range hyps {
		alone := data.MakeBatches([]data.Example{examples[together.Index[r]]}, data.BatchOptions{}, nil)[0]
		want := m.Greedy(&alone, 12)[0]
		if fmt.Sprint(h.Tokens) != fmt.Sprint(want.Tokens) || h.Finished != want.Finished || len(h.Attention) != len(want.Attention) {
			t.Fatalf("row %d: batched %v (finished %v), alone %v (finished %v)", r, h.Tokens, h.Finished, want.Tokens, want.Finished)
		}
		for s := range h.Attention {
			for i := range h.Attention[s] {
				if math.Abs(float64(h.Attention[s][i]-want.Attention[s][i])) > 1e-6 {
					t.Fatalf("row %d step %d: attention differs", r, s)
				}
			}
		}
		lengths[len(h.Attention)] = true
	}
	if len(lengths) < 3 {
		t.Fatalf("rows ended after %d distinct numbers of steps: the batch barely shrank, so compaction went untested", len(lengths))
	}
}
