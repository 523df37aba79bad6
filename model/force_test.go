package model

import (
	"math"
	"slices"
	"testing"

	"github.com/attend-nmt/attend/data"
	"github.com/attend-nmt/attend/decoder"
)

// TestForcingGreedyOutputReproducesGreedy decodes a batch greedily, then forces the same words (and </s>) back
// through the model as targets in one batch: every step must show greedy's attention, each forced word must
// be the step's most likely word (so its log-probability is the row's maximum), and the log-probabilities
// must add up to minus the teacher-forced validation loss of the same batch.
func TestForcingGreedyOutputReproducesGreedy(t *testing.T) {
	const tolerance = 1e-9
	cfg := ModelConfig{Emb: 8, EncHidden: 8, DecHidden: 12, AttnDim: 6, Cell: "lstm", Attention: "mlp"}
	sources := randomSources(5, 1, 6)
	batch := data.MakeBatches(sources, data.BatchOptions{BatchSize: len(sources)}, nil)[0]
	// Take the first random model (a small target vocabulary: </s> comes up often) whose greedy output has
	// finished and unfinished rows and no <pad> word, which the validation loss would skip.
	var m *Seq2Seq[float64]
	var hyps []decoder.Hypothesis
	for seed := uint64(1); ; seed++ {
		if seed == 200 {
			t.Fatal("no random model gave a usable greedy output")
		}
		m = newTestModel[float64](t, cfg, 20, 6, seed)
		hyps = m.Greedy(&batch, 10)
		finished, pads := 0, 0
		for _, h := range hyps {
			if h.Finished {
				finished++
			}
			if slices.Contains(h.Tokens, data.PadID) {
				pads++
			}
		}
		if finished > 0 && finished < len(hyps) && pads == 0 {
			break
		}
	}
	forcedExamples := make([]data.Example, len(sources))
	for r, h := range hyps {
		i := batch.Index[r]
		forcedExamples[i] = data.Example{Src: sources[i].Src, Tgt: append([]int{}, h.Tokens...)}
	}
	// RoundLen pads source and target beyond the longest row, so padding is read if Force indexes wrongly.
	forcedBatch := data.MakeBatches(forcedExamples, data.BatchOptions{BatchSize: len(sources), RoundLen: 4}, nil)[0]
	forced := m.Force(&forcedBatch)
	byExample := make([]Forced, len(sources))
	for r, f := range forced {
		byExample[forcedBatch.Index[r]] = f
	}
	logits := m.Decoder.TeacherForced(m.Encode(&forcedBatch), forcedBatch.SrcLengths, forcedBatch.TgtIn, nil, forcedBatch.TgtLen, false).Logits
	v := m.TgtVocab.Size()
	var sum float64
	for r, h := range hyps {
		i := batch.Index[r]
		f := byExample[i]
		if len(f.Attention) != len(h.Tokens)+1 || len(f.LogProbs) != len(h.Tokens)+1 {
			t.Fatalf("sentence %d: %d words forced into %d attention rows and %d log-probs", i, len(h.Tokens), len(f.Attention), len(f.LogProbs))
		}
		// A greedy row cut at the length limit has no </s> row to compare.
		for step := range h.Attention {
			if len(f.Attention[step]) != len(sources[i].Src) {
				t.Fatalf("sentence %d step %d: %d weights for %d source words", i, step, len(f.Attention[step]), len(sources[i].Src))
			}
			for k, w := range h.Attention[step] {
				if math.Abs(float64(w-f.Attention[step][k])) > 1e-6 {
					t.Fatalf("sentence %d step %d word %d: greedy weight %v, forced %v", i, step, k, w, f.Attention[step][k])
				}
			}
		}
		fr := findRow(forcedBatch.Index, i)
		for step, lp := range f.LogProbs {
			at := (step*forcedBatch.Rows + fr) * v
			row := logits[at : at+v]
			best := row[0]
			for _, x := range row {
				best = math.Max(best, x)
			}
			if want := best - logSumExp(row); (step < len(h.Tokens) || h.Finished) && math.Abs(lp-want) > tolerance {
				t.Fatalf("sentence %d step %d: forced log-prob %v, the step's best is %v", i, step, lp, want)
			}
			if lp > 0 {
				t.Fatalf("sentence %d step %d: log-prob %v > 0", i, step, lp)
			}
			sum += lp
		}
	}
	loss, tokens := m.Loss(&forcedBatch)
	if math.Abs(sum+loss) > tolerance*float64(tokens) {
		t.Errorf("log-probs sum to %v, validation loss is %v", sum, loss)
	}
}

func findRow(index []int, example int) int {
	for r, i := range index {
		if i == example {
			return r
		}
	}
	panic("example not in batch")
}
