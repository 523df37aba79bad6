package main

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/attend-nmt/attend/app"
	"github.com/attend-nmt/attend/curves"
	"github.com/attend-nmt/attend/internal/plural"
	"github.com/spf13/cobra"
)

// plotOptions is everything `attend plot` reads from its command line.
type plotOptions struct {
	metrics, out, title string
}

func newPlotCmd() *cobra.Command {
	var o plotOptions
	cmd := &cobra.Command{
		Use:   "plot --metrics RUN.metrics.jsonl --out curves.png",
		Short: "Draw a training run's loss, validation perplexity and speed from its metrics log",
		Long: `Plot reads the metrics log that attend train writes beside its checkpoint (NAME.metrics.jsonl) and draws
three panels that share the step axis: training loss, validation perplexity and training target tokens per
second, as .png or .svg (--out). The title names the run (NAME, or --title) with its steps, epochs and best
validation perplexity.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runPlot(cmd, o) },
	}
	fl := cmd.Flags()
	fl.StringVar(&o.metrics, "metrics", "", "metrics log of a training run (required)")
	fl.StringVarP(&o.out, "out", "o", "", "picture to write: .png or .svg (required)")
	fl.StringVar(&o.title, "title", "", "the run's name in the title (default: NAME of NAME.metrics.jsonl)")
	_ = cmd.MarkFlagRequired("metrics")
	_ = cmd.MarkFlagRequired("out")
	return cmd
}

func runPlot(cmd *cobra.Command, o plotOptions) error {
	if ext := strings.ToLower(filepath.Ext(o.out)); ext != ".png" && ext != ".svg" {
		return fmt.Errorf("--out %s: %w", o.out, curves.ErrFormat)
	}
	if err := app.CheckOutputs([]app.NamedPath{{Role: "--out", Path: o.out, Example: "curves" + filepath.Ext(o.out)}}, []app.NamedPath{{Role: "--metrics", Path: o.metrics}}); err != nil {
		return err
	}
	c, err := curves.ReadFile(o.metrics)
	if err != nil {
		return err
	}
	name := o.title
	if name == "" {
		name = curves.RunName(o.metrics)
	}
	if err := curves.Write(o.out, c.Title(name), c); err != nil {
		return err
	}
	fmt.Fprintf(cmd.OutOrStdout(), "%s: %s, %s\n", o.out, plural.Count(len(c.Loss), "logged step"), plural.Count(len(c.ValidPPL), "validation"))
	return nil
}
