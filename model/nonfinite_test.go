package model

import (
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/attend-nmt/attend/model/checkpoint"
)

// TestLoadRefusesNonFiniteValues crafts checkpoints with one NaN or infinite value in a weight or an optimizer
// moment, with a valid checksum (written through the checkpoint package), and requires Load to refuse each,
// naming the file and the tensor; such a weight made greedy search print <pad> and beam search panic.
func TestLoadRefusesNonFiniteValues(t *testing.T) {
	cfg := tinyConfig()
	m, _ := tinySetup(t, cfg, tinyCorpus(24, 1))
	dir := t.TempDir()
	good := filepath.Join(dir, "good.ckpt")
	if err := Save(good, cfg, m, NewAdam(m.Params, cfg.Train.LR), Progress{}); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(good); err != nil {
		t.Fatalf("the unedited checkpoint: %v", err)
	}
	for _, c := range []struct {
		tensor string
		index  int
		value  float64
	}{
		{"tgt_emb", 7, math.NaN()},
		{"src_emb", 0, math.Inf(1)},
		{"adam.v.tgt_emb", 3, math.Inf(-1)},
		{"adam.m.src_emb", 1, math.NaN()},
	} {
		t.Run(c.tensor, func(t *testing.T) {
			f, err := checkpoint.Read(good)
			if err != nil {
				t.Fatal(err)
			}
			found := false
			for _, tensor := range f.Tensors {
				if tensor.Name == c.tensor {
					tensor.F32[c.index] = float32(c.value)
					found = true
				}
			}
			if !found {
				t.Fatalf("the checkpoint has no tensor %s", c.tensor)
			}
			path := filepath.Join(dir, c.tensor+".ckpt")
			if err := checkpoint.Write(path, f); err != nil {
				t.Fatal(err)
			}
			if _, err := checkpoint.Read(path); err != nil {
				t.Fatalf("the crafted file does not pass the checksum: %v", err)
			}
			_, err = Load(path)
			want := "tensor " + c.tensor + " holds "
			if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "must be finite") {
				t.Fatalf("Load = %v, want an error naming %s and %q", err, path, want)
			}
		})
	}
}
