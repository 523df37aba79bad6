package model

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"path/filepath"
	"slices"
	"testing"

	"github.com/attend-nmt/attend/data"
)

// TestValidBLEUScoresGreedyOutputs builds references from a random model's own greedy outputs: scored against
// them the model gets BLEU 100; with the first reference word of a sentence replaced by <unk> (a word outside
// the vocabulary) one n-gram of each order stops matching, as computed by hand; and only the first n pairs
// count.
func TestValidBLEUScoresGreedyOutputs(t *testing.T) {
	m := newTestModel[float32](t, beamTestConfig, 20, 12, 4)
	examples := randomSources(1, 3, 8)
	b := data.MakeBatches(examples, data.BatchOptions{BatchSize: len(examples)}, nil)[0]
	const maxLen = 9
	var long []data.Example // sentences whose output has at least 4 words, so that 4-grams exist, and no <unk>
	for r, h := range m.Greedy(&b, maxLen) {
		if len(h.Tokens) >= 4 && !slices.Contains(h.Tokens, data.UnkID) {
			long = append(long, data.Example{Src: examples[b.Index[r]].Src, Tgt: h.Tokens})
		}
	}
	if len(long) < 2 {
		t.Fatalf("only %d outputs of 4 words or more; pick another seed", len(long))
	}
	ctx := context.Background()
	if got, err := ValidBLEU(ctx, m, long, len(long), 2, maxLen); err != nil || math.Abs(got-100) > 1e-9 {
		t.Fatalf("BLEU against the model's own outputs: %v (%v), want 100", got, err)
	}
	// The first sentence alone (n = 1 of two pairs), its first reference word replaced by <unk>.
	first := long[0]
	first.Tgt = append([]int{data.UnkID}, first.Tgt[1:]...)
	n := len(first.Tgt)
	want := 100 * math.Exp((math.Log(float64(n-1)/float64(n))+math.Log(float64(n-2)/float64(n-1))+
		math.Log(float64(n-3)/float64(n-2))+math.Log(float64(n-4)/float64(n-3)))/4)
	got, err := ValidBLEU(ctx, m, []data.Example{first, long[1]}, 1, 2, maxLen)
	if err != nil || math.Abs(got-want) > 1e-9 {
		t.Fatalf("BLEU of the first sentence with a reference <unk>: %v (%v), want %v", got, err, want)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := ValidBLEU(cancelled, m, long, len(long), 2, maxLen); err == nil {
		t.Fatal("a cancelled validation returned no error")
	}
}

// TestBestCheckpointByValidationBLEU trains with train.best_metric bleu: every validation logs its BLEU, a
// validation is the best exactly when its BLEU beats all before it, and the best checkpoint scores the best BLEU
// logged.
func TestBestCheckpointByValidationBLEU(t *testing.T) {
	cfg := tinyConfig()
	cfg.Train.ValidEvery, cfg.Train.MaxSteps, cfg.Train.ValidBLEU, cfg.Train.BestMetric = 5, 60, 16, "bleu"
	m, examples := tinySetup(t, cfg, tinyCorpus(200, 1))
	valid := examples[:16]
	path := filepath.Join(t.TempDir(), "b.ckpt")
	var log bytes.Buffer
	sum, err := Train(context.Background(), TrainOptions{Config: cfg, Corpus: data.Examples(examples), Valid: valid, Model: m, Out: path, Metrics: &log})
	if err != nil {
		t.Fatal(err)
	}
	bestBLEU, validations := -1.0, 0
	for _, line := range bytes.Split(bytes.TrimSpace(log.Bytes()), []byte("\n")) {
		var r struct {
			Event     string   `json:"event"`
			Step      int      `json:"step"`
			Best      bool     `json:"best"`
			ValidBLEU *float64 `json:"valid_bleu"`
		}
		if err := json.Unmarshal(line, &r); err != nil {
			t.Fatal(err)
		}
		if r.Event != "valid" {
			continue
		}
		validations++
		if r.ValidBLEU == nil {
			t.Fatalf("validation at step %d logged no valid_bleu: %s", r.Step, line)
		}
		if want := *r.ValidBLEU > bestBLEU; r.Best != want {
			t.Fatalf("validation at step %d: BLEU %g after a best of %g, best %v", r.Step, *r.ValidBLEU, bestBLEU, r.Best)
		}
		bestBLEU = max(bestBLEU, *r.ValidBLEU)
	}
	if validations < 3 || bestBLEU <= 0 {
		t.Fatalf("%d validations, best BLEU %g: the run learned nothing to compare (%s)", validations, bestBLEU, sum)
	}
	ck, err := Load(BestPath(path))
	if err != nil {
		t.Fatal(err)
	}
	got, err := ValidBLEU(context.Background(), ck.Model, valid, cfg.Train.ValidBLEU, cfg.Decode.Batch, cfg.Decode.MaxLen)
	if err != nil || got != bestBLEU || *ck.Progress.BestValidBLEU != bestBLEU {
		t.Fatalf("best checkpoint scores BLEU %v (%v), records %v; the best logged is %v", got, err, *ck.Progress.BestValidBLEU, bestBLEU)
	}
}
