package app

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/attend-nmt/attend/align"
	"github.com/attend-nmt/attend/model"
)

func TestAlignerConfigFileMatchesBuiltIn(t *testing.T) {
	cfg, _, err := model.LoadConfig("../configs/align.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if cfg != AlignerConfig() {
		t.Fatalf("configs/align.yaml:\n%s\nAlignerConfig():\n%s", cfg.YAML(), AlignerConfig().YAML())
	}
}

// TestAlignTrain runs the one-command aligner (align --train DIR) on the synthetic corpus in one " ||| " file,
// its models at the demo's size: the symmetrized links of the two models' alignment attention score within a
// margin of the AER measured against the generator's gold. The first run finds links of a run stopped before
// its first checkpoint in DIR, removes them, and stops after one epoch, as an interrupted run would: the next
// resumes each model from its checkpoint. Run again on the finished DIR, the same command trains nothing and
// writes the same links. align --model --reverse --threshold links by the two models' alignment attention.
func TestAlignTrain(t *testing.T) {
	dir, bars, tr := synthBars(t, 3)
	preset := AlignerConfig()
	preset.Model = DemoConfig().Model
	preset.Model.Attention, preset.Model.AttendAfterInput, preset.Model.FullContextAlignment = "general", true, true
	preset.Data.MinFreq, preset.Data.Batch, preset.Train.LR = 1, 32, 3e-3
	work := filepath.Join(dir, "aligner")
	output := filepath.Join(dir, "links.txt")
	run := func(epochs int) (string, string) {
		t.Helper()
		var stdout, stderr bytes.Buffer
		o := AlignOptions{Streams: Streams{Stdout: &stdout, Stderr: &stderr}, Train: work, Epochs: epochs, preset: &preset,
			Corpus: Corpus{TSV: bars}, Gold: filepath.Join(dir, "train.align"), Output: output, Batch: 64, Iterations: 4, Threads: 2,
			Given: map[string]bool{"epochs": true}}
		began := time.Now()
		if err := RunAlign(context.Background(), o); err != nil {
			t.Fatalf("%v\n%s", err, stderr.String())
		}
		t.Logf("%d epochs, %.1fs: %s", epochs, time.Since(began).Seconds(), stdout.String())
		links, err := os.ReadFile(output)
		if err != nil {
			t.Fatal(err)
		}
		return string(links), stdout.String() + stderr.String()
	}
	// Links left by a run stopped before its first checkpoint (no checkpoint records them).
	stale := filepath.Join(work, "reverse.align")
	if err := os.MkdirAll(work, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(stale, []byte("0-0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, log := run(1); !strings.Contains(log, "removed "+stale) {
		t.Errorf("the first run does not say it removed %s:\n%s", stale, log)
	}
	first, log := run(2)
	for _, ck := range func() [2]string { f, r := alignerCheckpoints(work); return [2]string{f, r} }() {
		if want := "resuming " + ck + " at epoch 2"; !strings.Contains(log, want) {
			t.Errorf("the second run does not say %q:\n%s", want, log)
		}
	}
	// Measured with --train's defaults (--sym intersection --threshold 0.25): AER 0.0033 (precision 0.9995,
	// recall 0.994); 0.0235 after one epoch (grow-diag-final-and of the argmaxes: 0.0074 after two).
	if aer := scoreOf(t, log); aer > 0.015 {
		t.Errorf("AER %.4f on the synthetic corpus; want at most 0.015\n%s", aer, log)
	}
	again, log := run(2)
	if strings.Contains(log, "aligner: training") || strings.Count(log, "not trained again") != 2 {
		t.Errorf("the run on a finished directory trained:\n%s", log)
	}
	if again != first || strings.Count(first, "\n") != len(tr) {
		t.Errorf("the run on a finished directory wrote other links, or not one line per pair (%d lines)", strings.Count(first, "\n"))
	}
	// Another corpus in the same directory is refused before anything is read or written there: its models and
	// split files are the first corpus's.
	pairs, err := os.ReadFile(bars)
	if err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(dir, "other.tsv")
	if err := os.WriteFile(other, append([]byte("x\ty\n"), pairs...), 0o644); err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	err = RunAlign(context.Background(), AlignOptions{Streams: Streams{Stdout: &stderr, Stderr: &stderr}, Train: work, Epochs: 3,
		preset: &preset, Corpus: Corpus{TSV: other}, Output: output, Batch: 64, Iterations: 4, Threads: 2, Given: map[string]bool{"epochs": true}})
	if err == nil || !strings.Contains(err.Error(), "holds the aligner of another corpus ("+bars+", says ") {
		t.Errorf("another corpus in %s: error %v, want it refused naming %s\n%s", work, err, bars, stderr.String())
	}
	if links, _ := os.ReadFile(output); string(links) != first {
		t.Errorf("the refused run changed %s", output)
	}
	// The two models by align --model --reverse, their alignment attention linked by a threshold.
	var stdout bytes.Buffer
	forward, reverse := alignerCheckpoints(work)
	if err := RunAlign(context.Background(), AlignOptions{Streams: Streams{Stdout: &stdout, Stderr: &stdout}, Model: forward, Reverse: reverse,
		Threshold: 0.3, Sym: string(align.Intersection), Corpus: Corpus{TSV: bars}, Gold: filepath.Join(dir, "train.align"),
		Output: output, Batch: 64, Iterations: 4}); err != nil {
		t.Fatal(err)
	}
	t.Log(stdout.String())
	if aer := scoreOf(t, stdout.String()); aer > 0.03 {
		t.Errorf("--model %s --reverse %s --threshold 0.3 --sym intersection: AER %.4f; want at most 0.03 (measured: 0.0043)", forward, reverse, aer)
	}
}

// scoreOf is the AER that align's score line in log says.
func scoreOf(t *testing.T, log string) float64 {
	t.Helper()
	_, after, ok := strings.Cut(log, "AER ")
	var aer float64
	if !ok {
		t.Fatalf("no score line:\n%s", log)
	}
	if _, err := fmt.Sscan(after, &aer); err != nil {
		t.Fatalf("score line: %v\n%s", err, log)
	}
	return aer
}
