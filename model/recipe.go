package model

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// This file holds the training recipe around the optimizer step: the learning-rate schedule (warm-up with
// inverse-square-root decay, and decay on a validation plateau), early stopping, and the rotation of the last
// few checkpoints.

// learningRate is the rate of the step that follows prog: train.lr, times the decays earned on validation
// plateaus, times the warm-up schedule when train.warmup is set: step/warmup while warming up, then
// sqrt(warmup/step).
func learningRate(t TrainConfig, prog Progress) float64 {
	lr := t.LR * prog.lrScale()
	if t.Warmup > 0 {
		step, warm := float64(prog.Step+1), float64(t.Warmup)
		lr *= min(step/warm, math.Sqrt(warm/step))
	}
	return lr
}

// RecipeWarnings lists the settings that Validate accepts but that are known to train badly, each a sentence
// for a warning at the start of a run: a Transformer at a constant learning rate (train.warmup 0), as a
// recurrent preset with model.type=transformer set on it gives, learns next to nothing where the Transformer
// preset's warm-up learns the task (3.5% exact against 95% on a reversal task).
func (c Config) RecipeWarnings() []string {
	var w []string
	if c.Model.IsTransformer() && c.Train.Warmup == 0 {
		w = append(w, fmt.Sprintf("a Transformer (model.type transformer) trains without train.warmup, at a constant learning rate of %g, and may learn nothing; "+
			"start from configs/transformer.yaml (its train.warmup and train.lr), or set train.warmup", c.Train.LR))
	}
	return w
}

// lrScale is the product of the plateau decays so far (1 before any).
func (p Progress) lrScale() float64 {
	if p.LRScale == 0 {
		return 1 // checkpoints from before the field existed
	}
	return p.LRScale
}

// recordValidation enters a validation's loss and BLEU (NaN when not measured) into prog and reports whether
// it is the best so far by train.best_metric: the lowest loss, or the highest BLEU. A validation that does not
// improve on it (or whose figure is not finite) counts toward train.patience and decays the rate by
// train.lr_decay. The best of both figures is kept either way.
func (p *Progress) recordValidation(loss, bleu float64, t TrainConfig) (best bool) {
	lossBetter := isFinite(loss) && (p.BestValidLoss == nil || loss < *p.BestValidLoss)
	bleuBetter := isFinite(bleu) && (p.BestValidBLEU == nil || bleu > *p.BestValidBLEU)
	if lossBetter {
		p.BestValidLoss = &loss
	}
	if bleuBetter {
		p.BestValidBLEU = &bleu
	}
	if t.BestByBLEU() && bleuBetter || !t.BestByBLEU() && lossBetter {
		p.BadValidations = 0
		return true
	}
	p.BadValidations++
	if t.LRDecay > 0 {
		p.LRScale = p.lrScale() * t.LRDecay
	}
	return false
}

// patienceLost reports whether train.patience validations in a row have not improved: training stops early.
func (p Progress) patienceLost(t TrainConfig) bool {
	return t.Patience > 0 && p.BadValidations >= t.Patience
}

// StepPath is where train.keep_last keeps the checkpoint of step beside the last one at path:
// NAME.step-N.ckpt.
func StepPath(path string, step int) string {
	return fmt.Sprintf("%s.step-%d.ckpt", strings.TrimSuffix(path, ".ckpt"), step)
}

// keepStep makes the checkpoint just saved at path also the one of its step (a hard link, or where the file
// system has none, what save writes there: Save, atomically), then removes the step checkpoints of path beyond
// the newest keep.
func keepStep(path string, step, keep int, save func(path string) error) error {
	kept := StepPath(path, step)
	if err := os.Remove(kept); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("keep %s: %w", kept, err)
	}
	if err := os.Link(path, kept); err != nil {
		if err := save(kept); err != nil {
			return fmt.Errorf("keep %s: %w", kept, err)
		}
	}
	steps, err := StepCheckpoints(path)
	if err != nil {
		return err
	}
	var errs []error
	for _, s := range steps[:max(len(steps)-keep, 0)] {
		if err := os.Remove(StepPath(path, s)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// StepCheckpoints lists, in increasing order, the steps whose checkpoint StepPath(path, step) exists: those
// that train.keep_last keeps.
func StepCheckpoints(path string) ([]int, error) {
	dir := filepath.Dir(path)
	prefix := filepath.Base(strings.TrimSuffix(path, ".ckpt")) + ".step-"
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("list step checkpoints of %s: %w", path, err)
	}
	var steps []int
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), prefix)
		if !ok || !e.Type().IsRegular() {
			continue
		}
		n, err := strconv.Atoi(strings.TrimSuffix(rest, ".ckpt"))
		if err != nil || !strings.HasSuffix(rest, ".ckpt") || n < 0 || filepath.Base(StepPath(path, n)) != e.Name() {
			continue
		}
		steps = append(steps, n)
	}
	slices.Sort(steps)
	return steps, nil
}
