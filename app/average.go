package app

import (
	"fmt"

	"github.com/attend-nmt/attend/internal/plural"
	"github.com/attend-nmt/attend/model"
	"github.com/attend-nmt/attend/model/checkpoint"
)

// AverageOptions is everything `attend average` reads from its command line: the checkpoints to average
// (Paths, or the newest LastN step checkpoints of the run whose --out is Of) and where the average goes.
type AverageOptions struct {
	Streams
	Out, Of string
	LastN   int
	Paths   []string
}

// RunAverage writes to o.Out a checkpoint whose weights are the mean of the checkpoints' weights, with the
// optimizer state and position of the last one, and reports it on o.Stdout.
func RunAverage(o AverageOptions) error {
	paths := o.Paths
	switch {
	case o.Of == "" && o.LastN != 0:
		return fmt.Errorf("--last needs --of CKPT")
	case o.Of != "" && len(o.Paths) > 0:
		return fmt.Errorf("give checkpoints or --last N --of CKPT, not both")
	case o.Of != "":
		if o.LastN < 1 {
			return fmt.Errorf("--last is %d; want at least 1", o.LastN)
		}
		steps, err := model.StepCheckpoints(o.Of)
		if err != nil {
			return err
		}
		if len(steps) < o.LastN {
			return tooFewSteps(o.Of, o.LastN, len(steps))
		}
		paths = nil
		for _, s := range steps[len(steps)-o.LastN:] {
			paths = append(paths, model.StepPath(o.Of, s))
		}
	case len(o.Paths) < 2:
		return fmt.Errorf("give at least two checkpoints to average (got %d)", len(o.Paths))
	}
	if err := CheckOutputs(CheckpointOutputs("--out", o.Out), namedPaths("an input", paths)); err != nil {
		return err
	}
	if _, err := checkpoint.RemoveStale(o.Out); err != nil {
		return err
	}
	averaging := o.startPhase("averaging", int64(len(paths)), "checkpoint")
	ck, err := model.AverageProgress(paths, func(n int) { averaging.Set(int64(n)) })
	averaging.End()
	if err != nil {
		return err
	}
	if err := model.Save(o.Out, ck.Config, ck.Model, ck.Adam, ck.Progress); err != nil {
		return err
	}
	fmt.Fprintf(o.Stdout, "averaged %s into %s\n", plural.Count(len(paths), "checkpoint"), o.Out)
	return nil
}

// tooFewSteps is the error of --last n when only found step checkpoints are beside path: it says why, from the
// training configuration in path: train.keep_last unset, set below n, or the run has not saved n times yet.
func tooFewSteps(path string, n, found int) error {
	have := fmt.Sprintf("--last %d: %s beside %s", n, plural.Count(found, "step checkpoint"), path)
	if found > 0 {
		have = fmt.Sprintf("--last %d: only %s beside %s", n, plural.Count(found, "step checkpoint"), path)
	}
	ck, err := model.Load(path)
	if err != nil {
		return fmt.Errorf("%s (a run keeps them with train.keep_last; %s cannot say more: %w)", have, path, err)
	}
	t := ck.Config.Train
	switch {
	case t.KeepLast == 0:
		return fmt.Errorf("%s: its run kept none (train.keep_last is 0); train with --set train.keep_last=%d, or give the checkpoints to average by name", have, n)
	case t.KeepLast < n:
		return fmt.Errorf("%s: its run keeps only the newest %d (train.keep_last %d); average those with --last %d, or train with train.keep_last=%d", have, t.KeepLast, t.KeepLast, min(t.KeepLast, found), n)
	default:
		every := fmt.Sprintf("one every %s (train.save_every) and one at each epoch's end", plural.Count(t.SaveEvery, "step"))
		if t.SaveEvery == 0 {
			every = "one at each epoch's end (train.save_every is 0)"
		}
		what := fmt.Sprintf("average %s with --last %d, or train longer", plural.Noun(found, "it", "those"), found)
		if found == 0 {
			what = "train longer"
		}
		return fmt.Errorf("%s: its run keeps %d (train.keep_last), saving %s, and is at step %d; %s",
			have, t.KeepLast, every, ck.Progress.Step, what)
	}
}
