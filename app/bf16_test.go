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

// TestTrainWithBF16 trains with train.bf16 where AMX or AVX512-BF16 runs, and requires the run to say on which
// and to write a checkpoint that loads with the key set; where neither runs, training must refuse with a message
// naming the key, before any work.
func TestTrainWithBF16(t *testing.T) {
	dir := t.TempDir()
	train, _ := writeCorpus(t, dir, 9)
	cfg := tinyTrainConfig()
	cfg.Train.MaxSteps, cfg.Train.BF16 = 3, true
	out := filepath.Join(dir, "m.ckpt")
	var stdout bytes.Buffer
	_, err := Train(context.Background(), TrainRequest{Config: cfg, Train: train, Out: out, Stdout: &stdout})
	if _, refused := kernels.NewAMXOutput(false); refused != nil {
		if err == nil || !strings.Contains(err.Error(), "train.bf16") {
			t.Fatalf("train.bf16 without AMX or AVX512-BF16 (%v): training gave %v, want an error naming the key", refused, err)
		}
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	if on := kernels.BF16ProductsOn(); on == "" || !strings.Contains(stdout.String(), "bfloat16 products on "+on) {
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

// TestTrainWithBF16x3 trains with train.bf16x3: where AMX runs the run must say that its output layer and decoder
// multiply in bfloat16x3, and elsewhere it must train in float32 without a word about it (the key asks for AMX
// where it runs, not for a refusal). The checkpoint keeps the key either way.
func TestTrainWithBF16x3(t *testing.T) {
	dir := t.TempDir()
	train, _ := writeCorpus(t, dir, 9)
	cfg := tinyTrainConfig()
	cfg.Train.MaxSteps, cfg.Train.BF16, cfg.Train.BF16x3 = 3, false, true
	out := filepath.Join(dir, "m.ckpt")
	var stdout bytes.Buffer
	if _, err := Train(context.Background(), TrainRequest{Config: cfg, Train: train, Out: out, Stdout: &stdout}); err != nil {
		t.Fatal(err)
	}
	says := strings.Contains(stdout.String(), "bfloat16x3 products on AMX")
	if says != kernels.HasAMX() {
		t.Fatalf("AMX here: %v; the run says bfloat16x3: %v:\n%s", kernels.HasAMX(), says, stdout.String())
	}
	ck, err := model.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	if !ck.Config.Train.BF16x3 || ck.Progress.Step != 3 {
		t.Fatalf("checkpoint: train.bf16x3 %v, step %d", ck.Config.Train.BF16x3, ck.Progress.Step)
	}
}

// TestTrainSaysItSharesTheVocabulary trains with two workers and train.bf16x3, train.split_vocabulary on and
// off: where AMX runs, the run with it on must say that its workers share out the output layer's vocabulary and
// record it in the checkpoint's arithmetic (a resume without it would not repeat the run bit for bit), and the
// run with it off must do neither; elsewhere neither run shares anything out or says so.
func TestTrainSaysItSharesTheVocabulary(t *testing.T) {
	for _, split := range []bool{true, false} {
		dir := t.TempDir()
		train, _ := writeCorpus(t, dir, 9)
		cfg := tinyTrainConfig()
		cfg.Train.MaxSteps, cfg.Train.BF16, cfg.Train.BF16x3, cfg.Train.SplitVocabulary, cfg.Train.Workers = 3, false, true, split, 2
		out := filepath.Join(dir, "m.ckpt")
		var stdout bytes.Buffer
		if _, err := Train(context.Background(), TrainRequest{Config: cfg, Train: train, Out: out, Stdout: &stdout}); err != nil {
			t.Fatal(err)
		}
		ck, err := model.Load(out)
		if err != nil {
			t.Fatal(err)
		}
		want := split && kernels.HasAMX()
		says := strings.Contains(stdout.String(), "train.split_vocabulary")
		records := strings.Contains(ck.Progress.Arithmetic, "sharing out the vocabulary")
		if says != want || records != want {
			t.Fatalf("split_vocabulary %v, AMX here %v: the run says so %v, its arithmetic %q:\n%s", split, kernels.HasAMX(), says,
				ck.Progress.Arithmetic, stdout.String())
		}
	}
}

// TestTrainSaysItPacksTheDecoderGates trains with float32 products on one worker and on two: with two, where
// AVX-512 runs, the decoder's gate products run on weights packed once a step, and the run says so in its header
// and records it in its arithmetic; with one (products on every thread, OpenBLAS's), neither.
func TestTrainSaysItPacksTheDecoderGates(t *testing.T) {
	for _, workers := range []int{2, 1} {
		dir := t.TempDir()
		train, _ := writeCorpus(t, dir, 9)
		cfg := tinyTrainConfig()
		cfg.Train.MaxSteps, cfg.Train.BF16, cfg.Train.BF16x3, cfg.Train.Workers = 3, false, false, workers
		out := filepath.Join(dir, "m.ckpt")
		var stdout bytes.Buffer
		if _, err := Train(context.Background(), TrainRequest{Config: cfg, Train: train, Out: out, Stdout: &stdout}); err != nil {
			t.Fatal(err)
		}
		ck, err := model.Load(out)
		if err != nil {
			t.Fatal(err)
		}
		want := workers > 1 && kernels.PackedGemmRuns()
		says := strings.Contains(stdout.String(), "decoder: its gates' products on float32 weights packed once a step")
		records := strings.Contains(ck.Progress.Arithmetic, "decoder gates packed")
		if says != want || records != want {
			t.Fatalf("%d workers, AVX-512 here %v: the run says so %v, its arithmetic %q:\n%s", workers, kernels.PackedGemmRuns(), says,
				ck.Progress.Arithmetic, stdout.String())
		}
	}
}
