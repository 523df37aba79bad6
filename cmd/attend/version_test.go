package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/attend-nmt/attend/kernels"
	"github.com/attend-nmt/attend/synth"
)

// TestVersionAndTrainingNameTheBLAS checks that attend version and the header of a training run name the same
// BLAS, the one main selected: gonum's pure-Go kernels in the binary these tests build (without -tags openblas).
func TestVersionAndTrainingNameTheBLAS(t *testing.T) {
	stdout, stderr, code := run(t, "", "version")
	if code != 0 {
		t.Fatalf("version: exit %d: %s", code, stderr)
	}
	var blas string
	for _, line := range strings.Split(stdout, "\n") {
		if rest, ok := strings.CutPrefix(line, "BLAS: "); ok {
			blas = rest
		}
	}
	if !strings.HasPrefix(blas, "gonum (pure Go") {
		t.Fatalf("version names the BLAS %q, want gonum's:\n%s", blas, stdout)
	}
	// It says whether bfloat16 products on AMX are used, as kernels finds them here.
	amx := "\nAMX: bfloat16 products on the tile registers"
	if _, err := kernels.NewAMXOutput(false); err != nil {
		amx = "\nAMX: not used (" + err.Error() + ")"
	}
	if !strings.Contains(stdout, amx) {
		t.Fatalf("version does not say %q:\n%s", amx[1:], stdout)
	}

	dir := t.TempDir()
	train, valid, test := synth.Split(200, 20, 5, 7)
	if err := synth.WriteFiles(dir, train, valid, test); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, code = run(t, "", "train", "--config", "../../configs/demo.yaml", "--src", filepath.Join(dir, "train.src"),
		"--tgt", filepath.Join(dir, "train.tgt"), "--out", filepath.Join(dir, "m.ckpt"), "--no-progress", "--max-steps", "2",
		"--set", "model.emb=8", "--set", "model.enc_hidden=8", "--set", "model.dec_hidden=8", "--set", "model.attn_dim=8")
	if code != 0 {
		t.Fatalf("train: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if !strings.Contains(stdout, "\nBLAS: "+blas+"\n") {
		t.Fatalf("the training header does not name the BLAS %q:\n%s", blas, stdout)
	}
}
