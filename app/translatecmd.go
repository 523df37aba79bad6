package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/attend-nmt/attend/internal/plural"
)

// TranslateOptions is everything `attend translate` reads from its command line.
type TranslateOptions struct {
	Streams
	Models []string // --model, one or several (an ensemble)
	// Input and Output are files ("" or "-": standard input and output); Attention and Alignments, optional,
	// are the files of TranslateRequest's Attention and Alignments.
	Input, Output, Attention, Alignments string
	Threshold                            float64 // 0 to 1, as the flag checks it
	ThresholdGiven                       bool    // --threshold was given
	Tokenized, TokenLevel                bool
	Search                               SearchFlags
}

// RunTranslate checks o, loads the models and translates o.Input into o.Output, reporting on o.Stderr how many
// sentences it translated and how fast; a cancelled ctx stops it with an error that says after how many.
func RunTranslate(ctx context.Context, o TranslateOptions) (err error) {
	if o.Input == "-" {
		o.Input = ""
	}
	if o.Output == "-" {
		o.Output = ""
	}
	if o.ThresholdGiven && o.Alignments == "" {
		return fmt.Errorf("--threshold %g chooses the links of --alignments, which is not given; add --alignments FILE, or drop --threshold", o.Threshold)
	}
	outputs := []NamedPath{{Role: "--output", Path: o.Output, Example: "translations.txt"},
		{Role: "--attention", Path: o.Attention, Example: "attention.jsonl"}, {Role: "--alignments", Path: o.Alignments, Example: "alignments.txt"}}
	if err := CheckOutputs(outputs, append([]NamedPath{{Role: "--input", Path: o.Input}}, namedPaths("--model", o.Models)...)); err != nil {
		return err
	}
	ck, ens, err := LoadModels(o.Models)
	if err != nil {
		return err
	}
	decode, err := o.Search.Options(o.Stderr, o.Models[0], ck, ens)
	if err != nil {
		return err
	}
	decode.Heads = o.Attention != ""
	decode.Alignment = o.Alignments != "" // a model with full-context alignment links by its alignment attention
	req := TranslateRequest{Model: ck.Model, Threshold: o.Threshold,
		TextOptions: TextOptions{Lowercase: ck.Config.Data.Lowercase, Decode: decode, Tokenized: o.Tokenized, TokenLevel: o.TokenLevel}}
	var fs files
	defer fs.close(&err)
	src, w, err := fs.filter(o.Input, o.Output, o.Streams)
	if err != nil {
		return err
	}
	req.Input, req.InputName, req.Output = src.R, src.Name, w
	for _, f := range []struct {
		path string
		w    *io.Writer
	}{{o.Attention, &req.Attention}, {o.Alignments, &req.Alignments}} {
		if f.path != "" {
			if *f.w, err = fs.create(f.path); err != nil {
				return err
			}
		}
	}
	name := o.Input
	if name == "" {
		name = "standard input"
	}
	translating := o.startPhase("translating "+name, inputLines(o.Input, req.Input), "sentence")
	defer translating.End()
	req.Decode.Progress = translating
	start := time.Now()
	n, err := Translate(ctx, req)
	secs := time.Since(start).Seconds()
	translating.End()
	if errors.Is(err, ctx.Err()) && ctx.Err() != nil {
		return fmt.Errorf("interrupted after %s", plural.Count(n, "sentence"))
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(o.Stderr, "translated %s in %.2fs (%.0f sentences/s)\n", plural.Count(n, "sentence"), secs, float64(n)/secs)
	return nil
}
