package model

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/attend-nmt/attend/data"
	"github.com/attend-nmt/attend/model/checkpoint"
)

// fullDisk is a metrics writer on a disk that fills up after limit bytes.
type fullDisk struct {
	bytes.Buffer
	limit int
}

func (d *fullDisk) Write(p []byte) (int, error) {
	if d.Len()+len(p) > d.limit {
		return 0, &os.PathError{Op: "write", Path: "m.metrics.jsonl", Err: syscall.ENOSPC}
	}
	return d.Buffer.Write(p)
}

// TestMetricsWriteErrorStopsTrainingAndSavesThePosition writes the metrics to a disk that fills up: the run must
// fail and say why, with its position saved in the checkpoint. (The command line refuses a metrics file that is
// a device such as /dev/full before any work, so this is where a full disk is tried.)
func TestMetricsWriteErrorStopsTrainingAndSavesThePosition(t *testing.T) {
	cfg := tinyConfig()
	cfg.Train.MaxSteps = 6
	m, examples := tinySetup(t, cfg, tinyCorpus(48, 7))
	path := filepath.Join(t.TempDir(), "m.ckpt")
	disk := &fullDisk{limit: 300}
	_, err := Train(context.Background(), TrainOptions{Config: cfg, Corpus: data.Examples(examples), Model: m, Out: path, Metrics: disk})
	if err == nil || !strings.Contains(err.Error(), "no space left on device") || !strings.Contains(err.Error(), "position is saved in "+path) {
		t.Fatalf("Train = %v, want a failure naming the full disk and the saved checkpoint", err)
	}
	ck, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if ck.Progress.Step < 1 || ck.Progress.Step >= cfg.Train.MaxSteps {
		t.Fatalf("saved position is step %d, want the step the metrics failed at", ck.Progress.Step)
	}
}

// TestSummaryCountsInTheRightNumber checks the last line of a run for "1 steps", "0 epochs" and the like.
func TestSummaryCountsInTheRightNumber(t *testing.T) {
	base := Summary{TokensPerSecond: 100, TrainLoss: 1, ValidLoss: math.NaN(), ValidPPL: math.NaN(), ValidBLEU: math.NaN()}
	for _, c := range []struct {
		edit     func(*Summary)
		want     []string
		wantNone []string
	}{
		{func(s *Summary) { s.Steps, s.Epochs = 10, 0 }, []string{"done: 10 steps (within epoch 1), "}, []string{"0 epochs"}},
		{func(s *Summary) { s.Steps, s.Epochs = 1, 1 }, []string{"done: 1 step, 1 epoch, "}, []string{"1 steps", "1 epochs"}},
		{func(s *Summary) { s.Steps, s.Epochs = 20, 2 }, []string{"done: 20 steps, 2 epochs, "}, nil},
		{func(s *Summary) { s.Steps, s.Epochs, s.BadSteps = 20, 2, 1 }, []string{", 1 step skipped (non-finite)"}, []string{"1 steps"}},
		{func(s *Summary) { s.Steps, s.Epochs, s.StoppedEarly, s.BadValidations = 20, 2, true, 1 }, []string{"stopped early: 1 validation in a row"}, []string{"1 validations"}},
	} {
		s := base
		c.edit(&s)
		line := s.String()
		for _, w := range c.want {
			if !strings.Contains(line, w) {
				t.Errorf("%q lacks %q", line, w)
			}
		}
		for _, w := range c.wantNone {
			if strings.Contains(line, w) {
				t.Errorf("%q says %q", line, w)
			}
		}
	}
}

// TestValidationFilesSurviveSaveAndLoad saves a position with the files its run validates on, and without:
// both load as saved. A header whose files name no corpus is refused.
func TestValidationFilesSurviveSaveAndLoad(t *testing.T) {
	cfg := tinyConfig()
	m, _ := tinySetup(t, cfg, tinyCorpus(24, 1))
	dir := t.TempDir()
	for _, files := range []CorpusFiles{{}, {Src: "/data/va.de", Tgt: "/data/va.en"}, {TSV: "/data/valid.tsv"}} {
		path := filepath.Join(dir, "m.ckpt")
		if err := Save(path, cfg, m, NewAdam(m.Params, cfg.Train.LR), Progress{Step: 3, ValidFiles: files}); err != nil {
			t.Fatal(err)
		}
		ck, err := Load(path)
		if err != nil {
			t.Fatal(err)
		}
		if got := ck.Progress.ValidFiles; got != files {
			t.Fatalf("saved validation files %+v, loaded %+v", files, got)
		}
	}
	for _, bad := range []CorpusFiles{{Src: "/data/va.de"}, {Src: "/data/va.de", Tgt: "/data/va.en", TSV: "/data/v.tsv"}, {Tgt: "/data/va.en", TSV: "/data/v.tsv"}} {
		path := filepath.Join(dir, "bad.ckpt")
		if err := Save(path, cfg, m, NewAdam(m.Params, cfg.Train.LR), Progress{Step: 3}); err != nil {
			t.Fatal(err)
		}
		f, err := checkpoint.Read(path)
		if err != nil {
			t.Fatal(err)
		}
		var h map[string]any
		if err := json.Unmarshal(f.Header, &h); err != nil {
			t.Fatal(err)
		}
		h["progress"].(map[string]any)["valid_files"] = bad
		if f.Header, err = json.Marshal(h); err != nil {
			t.Fatal(err)
		}
		if err := checkpoint.Write(path, f); err != nil {
			t.Fatal(err)
		}
		if _, err := Load(path); err == nil || !strings.Contains(err.Error(), "progress.valid_files") {
			t.Fatalf("Load of valid_files %+v = %v, want an error naming progress.valid_files", bad, err)
		}
	}
	if got := fmt.Sprint(LockPath("dir/m.ckpt"), " ", LockPath("m")); got != "dir/m.lock m.lock" {
		t.Fatalf("LockPath: %s", got)
	}
}
