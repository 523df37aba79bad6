package app

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/attend-nmt/attend/curves"
	"github.com/attend-nmt/attend/internal/plural"
)

// PlotOptions is everything `attend plot` reads from its command line.
type PlotOptions struct {
	Streams
	Metrics, Out string // the metrics log to read; the picture to write (.png or .svg)
	Title        string // the run's name in the title ("": NAME of NAME.metrics.jsonl)
}

// RunPlot draws the training curves of the metrics log o.Metrics into o.Out and reports on o.Stdout what it
// drew.
func RunPlot(o PlotOptions) error {
	if ext := strings.ToLower(filepath.Ext(o.Out)); ext != ".png" && ext != ".svg" {
		return fmt.Errorf("--out %s: %w", o.Out, curves.ErrFormat)
	}
	if err := CheckOutputs([]NamedPath{{Role: "--out", Path: o.Out, Example: "curves" + filepath.Ext(o.Out)}}, []NamedPath{{Role: "--metrics", Path: o.Metrics}}); err != nil {
		return err
	}
	c, err := curves.ReadFile(o.Metrics)
	if err != nil {
		return err
	}
	name := o.Title
	if name == "" {
		name = curves.RunName(o.Metrics)
	}
	if err := curves.Write(o.Out, c.Title(name), c); err != nil {
		return err
	}
	fmt.Fprintf(o.Stdout, "%s: %s, %s\n", o.Out, plural.Count(len(c.Loss), "logged step"), plural.Count(len(c.ValidPPL), "validation"))
	return nil
}
