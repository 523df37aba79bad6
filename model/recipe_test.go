package model

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	"github.com/attend-nmt/attend/data"
)

func TestLearningRateSchedule(t *testing.T) {
	const tol = 1e-15
	for _, c := range []struct {
		name  string
		cfg   TrainConfig
		prog  Progress
		wantR float64 // the rate, as a multiple of train.lr
	}{
		{"constant", TrainConfig{LR: 2}, Progress{Step: 99}, 1},
		{"old checkpoint, no scale stored", TrainConfig{LR: 2}, Progress{Step: 5, LRScale: 0}, 1},
		{"two decays of 0.5", TrainConfig{LR: 2}, Progress{Step: 5, LRScale: 0.25}, 0.25},
		{"warm-up, first step", TrainConfig{LR: 2, Warmup: 4}, Progress{Step: 0}, 1.0 / 4},
		{"warm-up, third step", TrainConfig{LR: 2, Warmup: 4}, Progress{Step: 2}, 3.0 / 4},
		{"warm-up, peak", TrainConfig{LR: 2, Warmup: 4}, Progress{Step: 3}, 1},
		{"after warm-up: sqrt(4/16)", TrainConfig{LR: 2, Warmup: 4}, Progress{Step: 15}, 0.5},
		{"after warm-up, decayed once", TrainConfig{LR: 2, Warmup: 4}, Progress{Step: 15, LRScale: 0.5}, 0.25},
	} {
		if got := learningRate(c.cfg, c.prog); math.Abs(got-2*c.wantR) > tol {
			t.Errorf("%s: rate %g, want %g", c.name, got, 2*c.wantR)
		}
	}
}

func TestValidationPlateauDecaysAndStops(t *testing.T) {
	cfg := TrainConfig{LRDecay: 0.5, Patience: 3}
	var p Progress
	for i, c := range []struct {
		loss      float64
		best      bool
		bad       int
		scale     float64
		patienceL bool
	}{
		{3, true, 0, 1, false},
		{2, true, 0, 1, false},
		{2, false, 1, 0.5, false}, // equal is no improvement
		{math.NaN(), false, 2, 0.25, false},
		{1.9, true, 0, 0.25, false}, // the decay stays after an improvement
		{2.5, false, 1, 0.125, false},
		{math.Inf(-1), false, 2, 0.0625, false},
		{4, false, 3, 0.03125, true},
	} {
		best := p.recordValidation(c.loss, math.NaN(), cfg)
		if best != c.best || p.BadValidations != c.bad || p.lrScale() != c.scale || p.patienceLost(cfg) != c.patienceL {
			t.Fatalf("validation %d (loss %g): best %v, bad %d, scale %g, patience lost %v; want %v, %d, %g, %v",
				i, c.loss, best, p.BadValidations, p.lrScale(), p.patienceLost(cfg), c.best, c.bad, c.scale, c.patienceL)
		}
	}
	if *p.BestValidLoss != 1.9 {
		t.Fatalf("best loss %g, want 1.9", *p.BestValidLoss)
	}
	var never Progress
	for range 5 {
		never.recordValidation(math.NaN(), math.NaN(), TrainConfig{})
	}
	if never.lrScale() != 1 || never.patienceLost(TrainConfig{}) {
		t.Fatalf("without lr_decay and patience: scale %g, patience lost %v", never.lrScale(), never.patienceLost(TrainConfig{}))
	}
}

// TestBestByBLEUFollowsBLEU: with train.best_metric bleu, the best validation is the highest BLEU whatever the
// loss does, and both bests are kept.
func TestBestByBLEUFollowsBLEU(t *testing.T) {
	cfg := TrainConfig{Patience: 2, ValidBLEU: 10, BestMetric: "bleu"}
	var p Progress
	for i, c := range []struct {
		loss, bleu float64
		best       bool
		bad        int
	}{
		{3, 10, true, 0},
		{2, 9, false, 1}, // lower loss, lower BLEU
		{2.5, 12, true, 0},
		{1.5, 12, false, 1}, // equal BLEU is no improvement
		{1.8, math.NaN(), false, 2},
	} {
		if best := p.recordValidation(c.loss, c.bleu, cfg); best != c.best || p.BadValidations != c.bad {
			t.Fatalf("validation %d (loss %g, BLEU %g): best %v, bad %d; want %v, %d", i, c.loss, c.bleu, best, p.BadValidations, c.best, c.bad)
		}
	}
	if *p.BestValidBLEU != 12 || *p.BestValidLoss != 1.5 || !p.patienceLost(cfg) {
		t.Fatalf("best BLEU %g, best loss %g, patience lost %v; want 12, 1.5, true", *p.BestValidBLEU, *p.BestValidLoss, p.patienceLost(cfg))
	}
}

func TestKeepStepKeepsTheNewest(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "m.ckpt")
	others := []string{"m.step-x.ckpt", "m.step-5.ckpt.tmp", "other.step-5.ckpt", "m.best.ckpt", "m2.step-1.ckpt"}
	for _, name := range others {
		writeTestFile(t, filepath.Join(dir, name), "keep me")
	}
	for _, step := range []int{10, 20, 30, 100} {
		writeTestFile(t, path, "state at step "+strconv.Itoa(step))
		if err := keepStep(path, step, 2, func(string) error { panic("hard links work in a temporary directory") }); err != nil {
			t.Fatal(err)
		}
		// A later save replaces path by rename: the kept file must not change with it.
		if err := os.Remove(path); err != nil {
			t.Fatal(err)
		}
	}
	steps, err := StepCheckpoints(path)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(steps, []int{30, 100}) {
		t.Fatalf("kept steps %v, want [30 100]", steps)
	}
	for _, step := range steps {
		if got := readFile(t, StepPath(path, step)); string(got) != "state at step "+strconv.Itoa(step) {
			t.Fatalf("%s holds %q", StepPath(path, step), got)
		}
	}
	for _, name := range others {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Fatalf("%s was touched: %v", name, err)
		}
	}
}

func writeTestFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestRecipeInTraining trains with validation every 3 steps on a validation set whose targets are shuffled (so
// that it stops improving), decay on plateaus, patience 2 and the last 2 checkpoints kept, and checks the
// metrics against the rules: each step's rate is train.lr halved once per non-improving validation before it,
// training stops right after the second non-improving validation in a row, and the kept checkpoints are the
// last two saves.
func TestRecipeInTraining(t *testing.T) {
	cfg := tinyConfig()
	cfg.Train.ValidEvery, cfg.Train.LRDecay, cfg.Train.Patience, cfg.Train.KeepLast = 3, 0.5, 2, 2
	cfg.Train.SaveEvery, cfg.Train.MaxSteps = 2, 400
	pairs := tinyCorpus(200, 1)
	m, examples := tinySetup(t, cfg, pairs)
	valid := slices.Clone(examples[:16])
	for i := range valid {
		valid[i].Tgt = examples[16+i].Tgt // someone else's target: learnable only by memorising
	}
	path := filepath.Join(t.TempDir(), "r.ckpt")
	var log bytes.Buffer
	sum, err := Train(context.Background(), TrainOptions{Config: cfg, Corpus: data.Examples(examples), Valid: valid, Model: m, Out: path, Metrics: &log})
	if err != nil {
		t.Fatal(err)
	}
	if !sum.StoppedEarly || sum.Steps >= cfg.Train.MaxSteps {
		t.Fatalf("run of %d steps did not stop early: %s", sum.Steps, sum)
	}
	type record struct {
		Event          string   `json:"event"`
		Step           int      `json:"step"`
		LR             float64  `json:"lr"`
		Best           bool     `json:"best"`
		BadValidations int      `json:"bad_validations"`
		ValidLoss      *float64 `json:"valid_loss"`
	}
	lr, bad, decays, lastValid := cfg.Train.LR, 0, 0, -1
	for _, line := range bytes.Split(bytes.TrimSpace(log.Bytes()), []byte("\n")) {
		var r record
		if err := json.Unmarshal(line, &r); err != nil {
			t.Fatal(err)
		}
		switch r.Event {
		case "step":
			if r.LR != lr {
				t.Fatalf("step %d: rate %g, want %g after %d decays", r.Step, r.LR, lr, decays)
			}
		case "valid":
			if r.Step == lastValid {
				t.Fatalf("step %d validated twice", r.Step)
			}
			if r.Step%cfg.Train.ValidEvery != 0 && r.Step != sum.Steps {
				t.Fatalf("validation at step %d, not a multiple of %d", r.Step, cfg.Train.ValidEvery)
			}
			lastValid = r.Step
			if r.Best {
				bad = 0
			} else {
				bad++
				decays++
				lr /= 2
			}
			if r.BadValidations != bad || r.LR != lr {
				t.Fatalf("validation at step %d: bad %d, rate %g; want %d, %g", r.Step, r.BadValidations, r.LR, bad, lr)
			}
		}
	}
	if decays == 0 || bad != cfg.Train.Patience || lastValid != sum.Steps {
		t.Fatalf("%d decays, last run of %d bad validations ending at step %d; the run ended at step %d", decays, bad, lastValid, sum.Steps)
	}
	steps, err := StepCheckpoints(path)
	if err != nil {
		t.Fatal(err)
	}
	// Saves come every SaveEvery steps and when the run ends (no epoch ends in this short run).
	var saves []int
	for s := cfg.Train.SaveEvery; s < sum.Steps; s += cfg.Train.SaveEvery {
		saves = append(saves, s)
	}
	saves = append(saves, sum.Steps)
	if want := saves[len(saves)-2:]; !slices.Equal(steps, want) {
		t.Fatalf("kept checkpoints of steps %v, want the last two saves %v", steps, want)
	}
	ck, err := Load(StepPath(path, steps[1]))
	if err != nil || ck.Progress.Step != steps[1] {
		t.Fatalf("kept checkpoint: %v, step %d", err, ck.Progress.Step)
	}
}
