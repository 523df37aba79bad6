package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/attend-nmt/attend/model"
	"github.com/attend-nmt/attend/synth"
)

// TestKillDashNineNeverLosesTheRun kills a training run with SIGKILL at seeded random moments — after a random
// delay, after a random step, or the moment a checkpoint's temporary file appears, that is during a save —
// and resumes it each time, 24 times (fewer where a run reaches the last step before its kill comes: a fast
// machine does more steps between kills). After every kill the last checkpoint (and the best one) must load and
// never go back a step; once a resumed run has started, no temporary of a killed one may remain. The run then
// finishes and must end at the same step with the same weights, moments and progress as a run never
// interrupted, and its metrics file must still be one JSON object per line.
func TestKillDashNineNeverLosesTheRun(t *testing.T) {
	if testing.Short() {
		t.Skip("kills and resumes a training run 24 times (~15 s)")
	}
	const (
		cycles   = 24
		maxSteps = 120
	)
	dir := t.TempDir()
	train, valid, test := synth.Split(300, 20, 5, 21)
	if err := synth.WriteFiles(dir, train, valid, test); err != nil {
		t.Fatal(err)
	}
	args := func(ckpt string) []string {
		return []string{"train", "--config", "../../configs/demo.yaml", "--src", filepath.Join(dir, "train.src"),
			"--tgt", filepath.Join(dir, "train.tgt"), "--valid-src", filepath.Join(dir, "valid.src"),
			"--valid-tgt", filepath.Join(dir, "valid.tgt"), "--out", ckpt, "--no-progress", "--epochs", "100",
			"--max-steps", strconv.Itoa(maxSteps), "--set", "train.save_every=3", "--set", "train.log_every=1",
			"--set", "model.emb=16", "--set", "model.enc_hidden=16", "--set", "model.dec_hidden=16", "--set", "model.attn_dim=16"}
	}

	refDir := t.TempDir()
	ref := filepath.Join(refDir, "m.ckpt")
	if stdout, stderr, code := run(t, "", args(ref)...); code != 0 {
		t.Fatalf("uninterrupted run: exit %d\n%s\n%s", code, stdout, stderr)
	}

	runDir := t.TempDir()
	ckpt := filepath.Join(runDir, "m.ckpt")
	rng := rand.New(rand.NewPCG(2026, 11))
	lastStep := -1 // no checkpoint yet
	var kills, duringSave, leftTemporaries, beforeFirstCheckpoint int
	finishedAt := -1 // the cycle whose run finished before it was killed, if one did
	for cycle := range cycles {
		argv := args(ckpt)
		if lastStep >= 0 {
			argv = append(argv, "--resume", ckpt)
		}
		cmd, stdout, stderr := startAttend(t, argv...)
		steps := make(chan int, maxSteps+1)
		started := false // the run got past removing stale temporaries (it printed its training data)
		scanned := make(chan struct{})
		go func() {
			defer close(scanned)
			defer close(steps)
			lines := bufio.NewScanner(stdout)
			for lines.Scan() {
				line := lines.Text()
				if strings.HasPrefix(line, "training data:") {
					started = true
				}
				if rest, ok := strings.CutPrefix(line, "step "); ok {
					if n, err := strconv.Atoi(strings.Fields(rest)[0]); err == nil {
						steps <- n
					}
				}
			}
		}()

		switch how := rng.IntN(3); how {
		case 0: // at a random moment from the start: reading, building, the first steps
			time.Sleep(time.Duration(rng.IntN(150_000)) * time.Microsecond)
		case 1: // shortly after a random step
			target, extra := max(lastStep, 0)+1+rng.IntN(6), time.Duration(rng.IntN(2000))*time.Microsecond
			for n := range steps {
				if n >= target {
					break
				}
			}
			time.Sleep(extra)
		case 2: // in the middle of a save: as soon as a temporary file exists
			for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
				if len(temporaries(t, runDir, cmd.Process.Pid)) > 0 {
					duringSave++
					break
				}
			}
		}
		cmd.Process.Kill()
		waitErr := cmd.Wait()
		<-scanned
		if code := exitCode(t, waitErr); code == 0 {
			// The run reached maxSteps before this cycle's kill: a fast machine does more steps between kills.
			// What it saved is checked below as the final run's would be.
			finishedAt = cycle
			break
		} else if code != -1 {
			t.Fatalf("cycle %d: the run was not killed but ended with %v; stderr: %s", cycle, waitErr, stderr.String())
		}
		kills++

		if left := temporaries(t, runDir, cmd.Process.Pid); len(left) > 0 {
			leftTemporaries++
		}
		if started {
			for _, name := range temporaries(t, runDir, 0) {
				if !strings.Contains(name, ".tmp-"+strconv.Itoa(cmd.Process.Pid)+"-") {
					t.Errorf("cycle %d: %s, left by an earlier killed run, survived the start of the next", cycle, name)
				}
			}
		}
		_, statErr := os.Stat(ckpt)
		if errors.Is(statErr, os.ErrNotExist) {
			if lastStep >= 0 {
				t.Fatalf("cycle %d: the checkpoint of step %d is gone", cycle, lastStep)
			}
			beforeFirstCheckpoint++
			continue
		}
		ck, err := model.Load(ckpt)
		if err != nil {
			t.Fatalf("cycle %d: the last checkpoint does not load after kill -9: %v", cycle, err)
		}
		if ck.Progress.Step < lastStep {
			t.Fatalf("cycle %d: the checkpoint went back from step %d to %d", cycle, lastStep, ck.Progress.Step)
		}
		lastStep = ck.Progress.Step
		if _, err := os.Stat(model.BestPath(ckpt)); err == nil {
			if _, err := model.Load(model.BestPath(ckpt)); err != nil {
				t.Fatalf("cycle %d: the best checkpoint does not load after kill -9: %v", cycle, err)
			}
		}
	}
	t.Logf("%d kills: %d during a save, %d left a temporary behind, %d before the first checkpoint; last checkpoint at step %d",
		kills, duringSave, leftTemporaries, beforeFirstCheckpoint, lastStep)

	if finishedAt >= 0 {
		t.Logf("the run of cycle %d finished before its kill: no final run", finishedAt)
	} else {
		final := args(ckpt)
		if lastStep >= 0 {
			final = append(final, "--resume", ckpt)
		}
		stdout, stderr, code := run(t, "", final...)
		if code != 0 || !strings.Contains(stdout, "done: "+strconv.Itoa(maxSteps)+" steps") {
			t.Fatalf("final run: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
		}
	}
	if left := temporaries(t, runDir, 0); len(left) > 0 {
		t.Errorf("temporaries left after the run finished: %v", left)
	}
	metrics, err := os.ReadFile(filepath.Join(runDir, "m.metrics.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	// One JSON object per line, and each step logged once: what a killed run logged after its last checkpoint
	// is dropped when the next run resumes from it.
	lastLogged := map[string]int{}
	for i, line := range strings.Split(strings.TrimSuffix(string(metrics), "\n"), "\n") {
		var rec struct {
			Event string `json:"event"`
			Step  int    `json:"step"`
		}
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Errorf("metrics line %d, written across kills, is not JSON: %q", i+1, line)
			continue
		}
		if last, ok := lastLogged[rec.Event]; ok && rec.Step <= last {
			t.Errorf("metrics line %d: %s record of step %d after one of step %d", i+1, rec.Event, rec.Step, last)
		}
		lastLogged[rec.Event] = rec.Step
	}
	got, err := model.Load(ckpt)
	if err != nil {
		t.Fatal(err)
	}
	want, err := model.Load(ref)
	if err != nil {
		t.Fatal(err)
	}
	// The whole position must match but the training time, and the best loss by value.
	gp, wp := got.Progress, want.Progress
	sameBest := (gp.BestValidLoss == nil) == (wp.BestValidLoss == nil) && (gp.BestValidLoss == nil || *gp.BestValidLoss == *wp.BestValidLoss)
	gp.ElapsedS, wp.ElapsedS, gp.BestValidLoss, wp.BestValidLoss = 0, 0, nil, nil
	if gp.Step != maxSteps || gp != wp || !sameBest || got.Adam.Steps != want.Adam.Steps {
		t.Fatalf("killed and resumed run ends at %+v (Adam step %d), the uninterrupted one at %+v (Adam step %d)", got.Progress, got.Adam.Steps, want.Progress, want.Adam.Steps)
	}
	for _, c := range []struct {
		name      string
		got, want []float32
	}{{"weights", got.Model.Params.Flat(), want.Model.Params.Flat()}, {"Adam's first moments", got.Adam.M.Flat(), want.Adam.M.Flat()},
		{"Adam's second moments", got.Adam.V.Flat(), want.Adam.V.Flat()}} {
		if !slices.Equal(c.got, c.want) {
			t.Errorf("%s differ from the uninterrupted run's", c.name)
		}
	}
}

// temporaries lists the checkpoint temporaries in dir: those of process pid, or of any process when pid is 0.
func temporaries(t *testing.T, dir string, pid int) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		name := e.Name()
		if !strings.HasPrefix(name, ".m.ckpt.tmp-") && !strings.HasPrefix(name, ".m.best.ckpt.tmp-") {
			continue
		}
		if pid == 0 || strings.Contains(name, ".tmp-"+strconv.Itoa(pid)+"-") {
			out = append(out, name)
		}
	}
	return out
}
