package main

import (
	"github.com/attend-nmt/attend/app"
	"github.com/spf13/cobra"
)

func newPlotCmd() *cobra.Command {
	var o app.PlotOptions
	cmd := &cobra.Command{
		Use:   "plot --metrics RUN.metrics.jsonl --out curves.png",
		Short: "Draw a training run's loss, validation perplexity and speed from its metrics log",
		Long: `Plot reads the metrics log that attend train writes beside its checkpoint (NAME.metrics.jsonl) and draws
three panels that share the step axis: training loss, validation perplexity and training target tokens per
second, as .png or .svg (--out). The title names the run (NAME, or --title) with its steps, epochs and best
validation perplexity.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.Streams = streamsOf(cmd)
			return app.RunPlot(o)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&o.Metrics, "metrics", "", "metrics log of a training run (required)")
	fl.StringVarP(&o.Out, "out", "o", "", "picture to write: .png or .svg (required)")
	fl.StringVar(&o.Title, "title", "", "the run's name in the title (default: NAME of NAME.metrics.jsonl)")
	_ = cmd.MarkFlagRequired("metrics")
	_ = cmd.MarkFlagRequired("out")
	return cmd
}
