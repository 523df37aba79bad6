package model

import (
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"
)

// TestAverageIsTheMeanOfTheWeights saves three differently initialised models of one architecture and checks
// that AverageProgress returns their element-wise mean (computed here in float64) with the last one's position, and
// that checkpoints of another architecture or vocabulary are refused with the difference named.
func TestAverageIsTheMeanOfTheWeights(t *testing.T) {
	cfg := tinyConfig()
	dir := t.TempDir()
	pairs := tinyCorpus(40, 1)
	var paths []string
	var weights [][]float32
	for i := range 3 {
		m, _ := tinySetup(t, cfg, pairs)
		m.Init(rand.New(rand.NewPCG(uint64(i), 9)))
		path := filepath.Join(dir, "m"+string(rune('a'+i))+".ckpt")
		if err := Save(path, cfg, m, NewAdam(m.Params, cfg.Train.LR), Progress{Step: 10 * (i + 1)}); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, path)
		weights = append(weights, m.Params.Flat())
	}
	avg, err := AverageProgress(paths, nil)
	if err != nil {
		t.Fatal(err)
	}
	if avg.Progress.Step != 30 {
		t.Fatalf("averaged checkpoint at step %d, want the last one's 30", avg.Progress.Step)
	}
	got := avg.Model.Params.Flat()
	for j := range got {
		want := float32((float64(weights[0][j]) + float64(weights[1][j]) + float64(weights[2][j])) / 3)
		if got[j] != want {
			t.Fatalf("weight %d: %g, want the mean %g of %g %g %g", j, got[j], want, weights[0][j], weights[1][j], weights[2][j])
		}
	}

	wider := cfg
	wider.Model.DecHidden = 48
	m, _ := tinySetup(t, wider, pairs)
	other := filepath.Join(dir, "wider.ckpt")
	if err := Save(other, wider, m, NewAdam(m.Params, cfg.Train.LR), Progress{}); err != nil {
		t.Fatal(err)
	}
	if _, err := AverageProgress([]string{paths[0], other}, nil); err == nil || !strings.Contains(err.Error(), "model.dec_hidden 32 → 48") {
		t.Fatalf("averaging another architecture: err = %v, want one naming model.dec_hidden", err)
	}
	m, _ = tinySetup(t, cfg, tinyCorpus(40, 2)[:3])
	other = filepath.Join(dir, "vocab.ckpt")
	if err := Save(other, cfg, m, NewAdam(m.Params, cfg.Train.LR), Progress{}); err != nil {
		t.Fatal(err)
	}
	if _, err := AverageProgress([]string{paths[0], other}, nil); err == nil || !strings.Contains(err.Error(), "vocabular") {
		t.Fatalf("averaging another vocabulary: err = %v", err)
	}
}
