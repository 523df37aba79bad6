package main

import (
	"fmt"

	"github.com/attend-nmt/attend/app"
	"github.com/attend-nmt/attend/internal/plural"
	"github.com/attend-nmt/attend/model"
	"github.com/attend-nmt/attend/model/checkpoint"
	"github.com/spf13/cobra"
)

func newAverageCmd() *cobra.Command {
	var out, last string
	var lastN int
	cmd := &cobra.Command{
		Use:   "average --out CKPT (CKPT... | --last N --of CKPT)",
		Short: "Average the weights of several checkpoints of one model",
		Long: `Average writes a checkpoint whose weights are the mean of the given checkpoints' weights, as OpenNMT-py's
average_models does; averaging the last few checkpoints of a run usually translates better than any one of them.
The checkpoints must share the model configuration and vocabularies. --last N --of m.ckpt takes the newest N
checkpoints that train.keep_last kept beside m.ckpt (m.step-STEP.ckpt). The result carries the optimizer state
and position of the last checkpoint given, so training can resume from it.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			paths := args
			switch {
			case last == "" && lastN != 0:
				return fmt.Errorf("--last needs --of CKPT")
			case last != "" && len(args) > 0:
				return fmt.Errorf("give checkpoints or --last N --of CKPT, not both")
			case last != "":
				if lastN < 1 {
					return fmt.Errorf("--last is %d; want at least 1", lastN)
				}
				steps, err := model.StepCheckpoints(last)
				if err != nil {
					return err
				}
				if len(steps) < lastN {
					return tooFewSteps(last, lastN, len(steps))
				}
				paths = nil
				for _, s := range steps[len(steps)-lastN:] {
					paths = append(paths, model.StepPath(last, s))
				}
			case len(args) < 2:
				return fmt.Errorf("give at least two checkpoints to average (got %d)", len(args))
			}
			var inputs []app.NamedPath
			for _, p := range paths {
				inputs = append(inputs, app.NamedPath{Role: "an input", Path: p})
			}
			if err := app.CheckOutputs(app.CheckpointOutputs("--out", out), inputs); err != nil {
				return err
			}
			if _, err := checkpoint.RemoveStale(out); err != nil {
				return err
			}
			averaging := progressOf(cmd).start("averaging", int64(len(paths)), "checkpoint")
			ck, err := model.AverageProgress(paths, func(n int) { averaging.Set(int64(n)) })
			averaging.End()
			if err != nil {
				return err
			}
			if err := model.Save(out, ck.Config, ck.Model, ck.Adam, ck.Progress); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "averaged %s into %s\n", plural.Count(len(paths), "checkpoint"), out)
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVarP(&out, "out", "o", "", "checkpoint to write (required)")
	fl.IntVar(&lastN, "last", 0, "average the newest N step checkpoints of --of")
	fl.StringVar(&last, "of", "", "the --out of a training run with train.keep_last")
	_ = cmd.MarkFlagRequired("out")
	return cmd
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
