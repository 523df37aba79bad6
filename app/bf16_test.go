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

// TestTrainWithBF16 trains with train.precision bf16 and bf16x3 where they run (bf16 on AMX or AVX512-BF16,
// bf16x3 on AMX), and requires the run to say which products it chose and to write a checkpoint that loads with
// the key set; where they do not run, training must refuse with a message naming the key, before any work.
func TestTrainWithBF16(t *testing.T) {
	for _, precision := range []kernels.Precision{kernels.PrecisionBF16, kernels.PrecisionBF16x3} {
		dir := t.TempDir()
		train, _ := writeCorpus(t, dir, 9)
		cfg := tinyTrainConfig()
		cfg.Train.MaxSteps, cfg.Train.Precision = 3, precision
		out := filepath.Join(dir, "m.ckpt")
		var stdout bytes.Buffer
		_, err := Train(context.Background(), TrainRequest{Config: cfg, Train: train, Out: out, Stdout: &stdout})
		products, refused := kernels.Choose(precision)
		if refused != nil {
			if err == nil || !strings.Contains(err.Error(), "train.precision") {
				t.Fatalf("train.precision %s where it cannot run (%v): training gave %v, want an error naming the key", precision, refused, err)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(stdout.String(), products.String()) {
			t.Fatalf("training with train.precision %s did not say %q:\n%s", precision, products, stdout.String())
		}
		ck, err := model.Load(out)
		if err != nil {
			t.Fatal(err)
		}
		if ck.Config.Train.Precision != precision || ck.Progress.Step != 3 {
			t.Fatalf("checkpoint: train.precision %s, step %d", ck.Config.Train.Precision, ck.Progress.Step)
		}
	}
}

// TestTrainSaysItSharesTheVocabulary trains with two workers and train.precision auto, train.split_vocabulary on
// and off: where auto chooses bfloat16 products, the run with it on must say that its workers share out the output layer's vocabulary and
// record it in the checkpoint's arithmetic (a resume without it would not repeat the run bit for bit), and the
// run with it off must do neither; elsewhere neither run shares anything out or says so.
func TestTrainSaysItSharesTheVocabulary(t *testing.T) {
	for _, split := range []bool{true, false} {
		dir := t.TempDir()
		train, _ := writeCorpus(t, dir, 9)
		cfg := tinyTrainConfig()
		cfg.Train.MaxSteps, cfg.Train.Precision, cfg.Train.SplitVocabulary, cfg.Train.Workers = 3, kernels.PrecisionAuto, split, 2
		out := filepath.Join(dir, "m.ckpt")
		var stdout bytes.Buffer
		if _, err := Train(context.Background(), TrainRequest{Config: cfg, Train: train, Out: out, Stdout: &stdout}); err != nil {
			t.Fatal(err)
		}
		ck, err := model.Load(out)
		if err != nil {
			t.Fatal(err)
		}
		auto, err := kernels.Choose(kernels.PrecisionAuto)
		if err != nil {
			t.Fatal(err)
		}
		want := split && !auto.Float32()
		says := strings.Contains(stdout.String(), "train.split_vocabulary")
		records := strings.Contains(ck.Progress.Arithmetic, "sharing out the vocabulary")
		if says != want || records != want {
			t.Fatalf("split_vocabulary %v, %s here: the run says so %v, its arithmetic %q:\n%s", split, auto, says,
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
		cfg.Train.MaxSteps, cfg.Train.Precision, cfg.Train.Workers = 3, kernels.PrecisionFloat32, workers
		out := filepath.Join(dir, "m.ckpt")
		var stdout bytes.Buffer
		if _, err := Train(context.Background(), TrainRequest{Config: cfg, Train: train, Out: out, Stdout: &stdout}); err != nil {
			t.Fatal(err)
		}
		ck, err := model.Load(out)
		if err != nil {
			t.Fatal(err)
		}
		want := workers > 1 && kernels.Float32Products().PacksWeights()
		says := strings.Contains(stdout.String(), "decoder: its gates' products on float32 weights packed once a step")
		records := strings.Contains(ck.Progress.Arithmetic, "decoder gates packed")
		if says != want || records != want {
			t.Fatalf("%d workers, packing here %v: the run says so %v, its arithmetic %q:\n%s", workers, want, says,
				ck.Progress.Arithmetic, stdout.String())
		}
	}
}
