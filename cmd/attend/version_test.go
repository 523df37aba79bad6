package main

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/attend-nmt/attend/backend"
	"github.com/attend-nmt/attend/kernels"
	"github.com/attend-nmt/attend/synth"
)

// TestVersionAndTrainingNameTheBLAS checks that attend version and the header of a training run name the same
// BLAS, the one main selected: that of this build (backend.Active once Select ran, as TestMain has it run), gonum's
// pure-Go kernels without -tags openblas and OpenBLAS with it.
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
	if want := backend.Active(); blas != want {
		t.Fatalf("version names the BLAS %q, want this build's, %q:\n%s", blas, want, stdout)
	}
	// It says which products precision auto chooses here and whether AMX runs, as kernels finds them.
	if !strings.Contains(stdout, "\n"+kernels.Here()+"\n") {
		t.Fatalf("version does not say %q:\n%s", kernels.Here(), stdout)
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

// TestTheAttendBinaryIsThisBuild checks that the attend binary TestMain builds, which the tests that need a process
// of their own start, is the build these tests run in: attend version names the same BLAS, elementwise kernels and
// AMX in that binary as in this process. The tests compare the two — TestKillDashNineNeverLosesTheRun resumes the
// binary's killed runs in this process and holds them to a run of this process bit for bit — and a binary built
// without the tests' tags (go test -tags openblas) multiplies on gonum's kernels, which round otherwise.
func TestTheAttendBinaryIsThisBuild(t *testing.T) {
	here, stderr, code := run(t, "", "version")
	if code != 0 {
		t.Fatalf("version in this process: exit %d: %s", code, stderr)
	}
	binary, stderr, code, hung := runFor(t, time.Minute, "", "version")
	if code != 0 || hung {
		t.Fatalf("version in the attend binary: exit %d (hung %v): %s", code, hung, stderr)
	}
	// The first line names attend's version, which go build and go test stamp differently; the rest is the build.
	_, want, _ := strings.Cut(here, "\n")
	_, got, _ := strings.Cut(binary, "\n")
	if got != want {
		t.Fatalf("the attend binary the tests start is another build than theirs:\n%s\nthis process:\n%s", binary, here)
	}
}
