//go:build mpi

package main

// Tests of data-parallel training under Open MPI (`make test-mpi`). They run only in a binary built with
// -tags mpi, need mpirun on PATH, and start the attend binary that TestMain built (with the same tags, see
// testBuildTags) under `mpirun --oversubscribe`, so two processes share this machine's cores.

import (
	"bufio"
	"encoding/json"
	"maps"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/attend-nmt/attend/model"
	"github.com/attend-nmt/attend/synth"
)

// Tolerances for comparing a run on two processes with the same run on one. The processes sum their halves
// of each batch's gradient, so the only difference is the order of float32 additions: relative differences of
// about 1e-7 per step, growing slowly over the run.
const (
	mpiLossRelTol   = 1e-4 // per logged step's training loss
	mpiWeightAbsTol = 1e-4 // per weight of the final checkpoints
)

// mpirunArgs are the mpirun options every test uses: running as root in containers, and more processes than
// cores.
var mpirunArgs = []string{"--allow-run-as-root", "--oversubscribe"}

// mpiCorpus writes a small synthetic corpus and returns the training arguments shared by every run: a tiny
// model, no dropout (each process would draw its own masks), one log line per step.
func mpiCorpus(t *testing.T) (dir string, args []string) {
	t.Helper()
	if _, err := exec.LookPath("mpirun"); err != nil {
		t.Skip("mpirun not on PATH")
	}
	dir = t.TempDir()
	train, valid, test := synth.Split(400, 20, 8, 5)
	if err := synth.WriteFiles(dir, train, valid, test); err != nil {
		t.Fatal(err)
	}
	args = []string{"train", "--config", "../../configs/demo.yaml", "--src", filepath.Join(dir, "train.src"),
		"--tgt", filepath.Join(dir, "train.tgt"), "--no-progress", "--threads", "1",
		"--set", "model.emb=16", "--set", "model.enc_hidden=16", "--set", "model.dec_hidden=16",
		"--set", "model.attn_dim=16", "--set", "model.dropout=0", "--set", "train.log_every=1",
		"--batch", "16", "--seed", "3"}
	return dir, args
}

// runMPI runs attend under mpirun with n processes and fails the test unless it exits 0.
func runMPI(t *testing.T, n int, args ...string) string {
	t.Helper()
	full := append(append(append([]string{}, mpirunArgs...), "-np", strconv.Itoa(n), attendBin), args...)
	cmd := exec.Command("mpirun", full...)
	cmd.Env = append(os.Environ(), "OPENBLAS_NUM_THREADS=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("mpirun -np %d %s: %v\n%s", n, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// stepLosses reads the training loss of every logged step from a metrics file, by step.
func stepLosses(t *testing.T, path string) map[int]float64 {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	losses := map[int]float64{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var rec struct {
			Event string  `json:"event"`
			Step  int     `json:"step"`
			Loss  float64 `json:"loss"`
		}
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if rec.Event == "step" {
			losses[rec.Step] = rec.Loss
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return losses
}

// compareLosses fails unless got has every step of want, with a loss within mpiLossRelTol.
func compareLosses(t *testing.T, what string, got, want map[int]float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d logged steps, want %d", what, len(got), len(want))
	}
	for _, step := range slices.Sorted(maps.Keys(want)) {
		w := want[step]
		g, ok := got[step]
		if !ok {
			t.Fatalf("%s: step %d not logged", what, step)
		}
		if rel := math.Abs(g-w) / math.Abs(w); !(rel <= mpiLossRelTol) {
			t.Errorf("%s: step %d loss %.9g, single process %.9g (relative difference %.2g > %g)", what, step, g, w, rel, mpiLossRelTol)
		}
	}
}

// TestMPITwoProcessesFollowOne trains the same model for 24 steps on one process and on two, and checks that
// the loss curves and the final weights agree to summation order, that only rank 0 writes and logs, that its
// checkpoint translates, and that a run started on two processes resumes on one.
func TestMPITwoProcessesFollowOne(t *testing.T) {
	for _, arch := range []struct {
		name string
		sets []string
	}{
		{"rnn", nil},
		{"transformer", []string{"--set", "model.type=transformer", "--set", "model.d_model=16", "--set", "model.heads=2",
			"--set", "model.ff=32", "--set", "model.layers=2"}},
	} {
		t.Run(arch.name, func(t *testing.T) { testMPITwoProcessesFollowOne(t, arch.sets) })
	}
}

// testMPITwoProcessesFollowOne is TestMPITwoProcessesFollowOne for the model the sets give.
func testMPITwoProcessesFollowOne(t *testing.T, sets []string) {
	dir, args := mpiCorpus(t)
	args = append(args, sets...)
	one := filepath.Join(dir, "one.ckpt")
	two := filepath.Join(dir, "two.ckpt")
	const steps = 24

	if _, stderr, code := run(t, "", append(args, "--out", one, "--max-steps", strconv.Itoa(steps))...); code != 0 {
		t.Fatalf("single-process train exited %d:\n%s", code, stderr)
	}
	out := runMPI(t, 2, append(args, "--out", two, "--max-steps", strconv.Itoa(steps))...)
	if !strings.Contains(out, "training on 2 processes") {
		t.Errorf("mpirun output does not say it trains on 2 processes:\n%s", out)
	}
	if n := strings.Count(out, "done:"); n != 1 {
		t.Errorf("%d processes printed the summary, want only rank 0:\n%s", n, out)
	}
	want := stepLosses(t, strings.TrimSuffix(one, ".ckpt")+".metrics.jsonl")
	compareLosses(t, "2 processes", stepLosses(t, strings.TrimSuffix(two, ".ckpt")+".metrics.jsonl"), want)

	a, err := model.Load(one)
	if err != nil {
		t.Fatal(err)
	}
	b, err := model.Load(two)
	if err != nil {
		t.Fatalf("rank 0's checkpoint: %v", err)
	}
	if a.Progress.Step != steps || b.Progress.Step != steps {
		t.Fatalf("checkpoints at steps %d and %d, want %d", a.Progress.Step, b.Progress.Step, steps)
	}
	wa, wb := a.Model.Params.Flat(), b.Model.Params.Flat()
	worst, at := 0.0, 0
	for i := range wa {
		if d := math.Abs(float64(wa[i] - wb[i])); d > worst || math.IsNaN(d) {
			worst, at = d, i
		}
	}
	if !(worst <= mpiWeightAbsTol) {
		t.Errorf("final weights differ by %.3g at index %d (> %g)", worst, at, mpiWeightAbsTol)
	}

	stdout, stderr, code := run(t, "", "translate", "--model", two, "--input", filepath.Join(dir, "test.src"))
	if code != 0 {
		t.Fatalf("translate with rank 0's checkpoint exited %d:\n%s", code, stderr)
	}
	if lines := strings.Count(stdout, "\n"); lines != 8 {
		t.Errorf("translate wrote %d lines for 8 inputs", lines)
	}

	// Resume the two-process run on one process for 8 more steps; the single-process run continued the same
	// way must agree.
	if _, stderr, code := run(t, "", append(args, "--out", two, "--resume", two, "--max-steps", strconv.Itoa(steps+8))...); code != 0 {
		t.Fatalf("resume on one process exited %d:\n%s", code, stderr)
	}
	if _, stderr, code := run(t, "", append(args, "--out", one, "--resume", one, "--max-steps", strconv.Itoa(steps+8))...); code != 0 {
		t.Fatalf("resume exited %d:\n%s", code, stderr)
	}
	compareLosses(t, "resumed on 1 after 2", stepLosses(t, strings.TrimSuffix(two, ".ckpt")+".metrics.jsonl"),
		stepLosses(t, strings.TrimSuffix(one, ".ckpt")+".metrics.jsonl"))
}

// TestMPIFailedProcessStopsTheJob starts two processes of which one is given a missing corpus: the job must
// end promptly with a non-zero status and a message naming the process and the file, not hang in the first
// gradient sum.
func TestMPIFailedProcessStopsTheJob(t *testing.T) {
	dir, args := mpiCorpus(t)
	out := filepath.Join(dir, "m.ckpt")
	bad := append([]string{}, args...)
	for i := range bad {
		if bad[i] == filepath.Join(dir, "train.src") {
			bad[i] = filepath.Join(dir, "missing.src")
		}
	}
	full := append(append([]string{}, mpirunArgs...), "-np", "1", attendBin)
	full = append(append(full, args...), "--out", out, "--max-steps", "1000", ":", "-np", "1", attendBin)
	full = append(append(full, bad...), "--out", out, "--max-steps", "1000")
	cmd := exec.Command("mpirun", full...)
	cmd.Env = append(os.Environ(), "OPENBLAS_NUM_THREADS=1")
	done := make(chan struct{})
	var output []byte
	var err error
	go func() { output, err = cmd.CombinedOutput(); close(done) }()
	select {
	case <-done:
	case <-time.After(2 * time.Minute):
		_ = cmd.Process.Kill()
		t.Fatal("the job did not stop within 2 minutes of a process failing")
	}
	if err == nil {
		t.Fatalf("mpirun exited 0 though process 1 had no corpus:\n%s", output)
	}
	for _, want := range []string{"process 1 of 2", "missing.src"} {
		if !strings.Contains(string(output), want) {
			t.Errorf("output does not name %q:\n%s", want, output)
		}
	}
}
