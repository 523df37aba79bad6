package app

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/attend-nmt/attend/kernels"
	"github.com/attend-nmt/attend/model"
)

// TestTrainWithBF16 trains with train.bf16 where AMX runs, and requires the run to say so and to write a
// checkpoint that loads with the key set; where AMX cannot run, training must refuse with a message naming the
// key, before any work.
func TestTrainWithBF16(t *testing.T) {
	dir := t.TempDir()
	train, _ := writeCorpus(t, dir, 9)
	cfg := tinyTrainConfig()
	cfg.Train.MaxSteps, cfg.Train.BF16 = 3, true
	out := filepath.Join(dir, "m.ckpt")
	var stdout bytes.Buffer
	_, err := Train(context.Background(), TrainRequest{Config: cfg, Train: train, Out: out, Stdout: &stdout})
	if _, amx := kernels.NewAMXOutput(false); amx != nil {
		if err == nil || !strings.Contains(err.Error(), "train.bf16") {
			t.Fatalf("train.bf16 without AMX (%v): training gave %v, want an error naming the key", amx, err)
		}
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stdout.String(), "bfloat16 products on AMX") {
		t.Fatalf("training with train.bf16 did not say so:\n%s", stdout.String())
	}
	ck, err := model.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	if !ck.Config.Train.BF16 || ck.Progress.Step != 3 {
		t.Fatalf("checkpoint: train.bf16 %v, step %d", ck.Config.Train.BF16, ck.Progress.Step)
	}
}
