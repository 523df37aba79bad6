package app

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTrainWithGuidedAlignment trains the tiny model with the synthetic corpus's gold links as
// train.guided_alignment: the metrics log the guided-alignment loss beside the translation loss, and it falls.
func TestTrainWithGuidedAlignment(t *testing.T) {
	dir := t.TempDir()
	train, _ := writeCorpus(t, dir, 3)
	cfg := tinyTrainConfig()
	cfg.Train.GuidedAlignment, cfg.Train.GuidedAlignmentWeight = filepath.Join(dir, "train.align"), 1
	cfg.Train.Epochs, cfg.Train.MaxSteps, cfg.Train.LogEvery, cfg.Train.LR = 60, 240, 4, 1e-2
	out := filepath.Join(dir, "g.ckpt")
	var stdout bytes.Buffer
	if _, err := Train(context.Background(), TrainRequest{Config: cfg, Train: train, Out: out, Stdout: &stdout}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stdout.String(), "guided alignment: links from "+cfg.Train.GuidedAlignment) {
		t.Errorf("the run does not say it is guided:\n%s", stdout.String())
	}
	f, err := os.Open(filepath.Join(dir, "g.metrics.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var guided []float64
	for sc := bufio.NewScanner(f); sc.Scan(); {
		var rec map[string]any
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			t.Fatal(err)
		}
		if rec["event"] != "step" {
			continue
		}
		g, ok := rec["guided_loss"].(float64)
		if _, hasLoss := rec["loss"].(float64); !ok || !hasLoss {
			t.Fatalf("step record without loss and guided_loss: %v", rec)
		}
		guided = append(guided, g)
	}
	mean := func(xs []float64) float64 {
		var s float64
		for _, x := range xs {
			s += x
		}
		return s / float64(len(xs))
	}
	if n := len(guided); n < 6 || guided[0] <= 0 || !(mean(guided[n-3:]) < 0.5*mean(guided[:3])) {
		t.Fatalf("guided-alignment loss over the run: %v; want the last three windows' below half the first three's", guided)
	}
}

// TestGuidedAlignmentRefusesBadLinksAndSettings: a links file of another length than the corpus, a link beyond
// its pair, an attention that cannot be guided, subwords and auto are errors that say what is wrong and where.
func TestGuidedAlignmentRefusesBadLinksAndSettings(t *testing.T) {
	dir := t.TempDir()
	train, _ := writeCorpus(t, dir, 4)
	raw, err := os.ReadFile(filepath.Join(dir, "train.align"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(raw), "\n")
	short := filepath.Join(dir, "short.align")
	if err := os.WriteFile(short, []byte(strings.Join(lines[:len(lines)-2], "")), 0o644); err != nil {
		t.Fatal(err)
	}
	beyond := filepath.Join(dir, "beyond.align")
	lines[2] = "0-0 99-1\n"
	if err := os.WriteFile(beyond, []byte(strings.Join(lines, "")), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, file, attention, subword string
		want                           []string
	}{
		{"fewer lines", short, "additive", "", []string{"short.align has 199 lines and the training corpus 200"}},
		{"link beyond its pair", beyond, "additive", "", []string{"beyond.align line 3", "99-1"}},
		{"local attention", filepath.Join(dir, "train.align"), "local", "", []string{"model.attention local cannot be guided", "additive"}},
		{"multi-head attention", filepath.Join(dir, "train.align"), "multi-head", "", []string{"model.attention multi-head cannot be guided"}},
		{"hard attention", filepath.Join(dir, "train.align"), "hard", "", []string{"model.attention hard cannot be guided"}},
		{"subwords", filepath.Join(dir, "train.align"), "additive", "bpe", []string{"train.guided_alignment needs data.subword none"}},
		{"auto", "auto", "additive", "", []string{"train.guided_alignment auto is not available"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := tinyTrainConfig()
			cfg.Model.Attention, cfg.Train.GuidedAlignment, cfg.Train.MaxSteps = c.attention, c.file, 1
			if c.subword != "" {
				cfg.Data.Subword, cfg.Data.Merges = c.subword, 50
			}
			_, err := Train(context.Background(), TrainRequest{Config: cfg, Train: train, Out: filepath.Join(dir, c.name+".ckpt"), Stdout: &bytes.Buffer{}})
			if err == nil {
				t.Fatal("trained")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}
