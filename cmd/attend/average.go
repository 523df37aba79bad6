package main

import (
	"github.com/attend-nmt/attend/app"
	"github.com/spf13/cobra"
)

func newAverageCmd() *cobra.Command {
	var o app.AverageOptions
	cmd := &cobra.Command{
		Use:   "average --out CKPT (CKPT... | --last N --of CKPT)",
		Short: "Average the weights of several checkpoints of one model",
		Long: `Average writes a checkpoint whose weights are the mean of the given checkpoints' weights, as OpenNMT-py's
average_models does; averaging the last few checkpoints of a run usually translates better than any one of them.
The checkpoints must share the model configuration and vocabularies. --last N --of m.ckpt takes the newest N
checkpoints that train.keep_last kept beside m.ckpt (m.step-STEP.ckpt). The result carries the optimizer state
and position of the last checkpoint given, so training can resume from it.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Streams, o.Paths = streamsOf(cmd), args
			return app.RunAverage(o)
		},
	}
	fl := cmd.Flags()
	fl.StringVarP(&o.Out, "out", "o", "", "checkpoint to write (required)")
	fl.IntVar(&o.LastN, "last", 0, "average the newest N step checkpoints of --of")
	fl.StringVar(&o.Of, "of", "", "the --out of a training run with train.keep_last")
	_ = cmd.MarkFlagRequired("out")
	return cmd
}
