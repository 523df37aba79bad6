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
					return fmt.Errorf("--last %d: only %s beside %s (set train.keep_last when training)", lastN, plural.Count(len(steps), "step checkpoint"), last)
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
			ck, err := model.Average(paths)
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
	fl.StringVar(&out, "out", "", "checkpoint to write (required)")
	fl.IntVar(&lastN, "last", 0, "average the newest N step checkpoints of --of")
	fl.StringVar(&last, "of", "", "the --out of a training run with train.keep_last")
	_ = cmd.MarkFlagRequired("out")
	return cmd
}
