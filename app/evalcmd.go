package app

import (
	"context"
	"errors"
	"fmt"
)

// EvalOptions is everything `attend eval` reads from its command line: the paths of the files to score, or of
// the models and the source to translate first ("-" reads standard input), and how to score them.
type EvalOptions struct {
	Streams
	Src, Output, Format string
	Models, Hyps, Refs  []string // Models: --model, one or several (an ensemble)
	TokLC, Perplexity   bool
	Confidence          bool
	PairedBS, PairedAR  bool
	Resamples, Trials   int
	Seed                uint64
	Metrics             []string
	Search              SearchFlags
	Version             string // attend's version, for the signatures
}

// RunEval checks o, opens its files, scores (translating first with o.Models), and writes the scores to
// o.Stdout as text or JSON (o.Format); warnings go to o.Stderr.
func RunEval(ctx context.Context, o EvalOptions) (err error) {
	if (len(o.Hyps) == 0) == (len(o.Models) == 0) {
		return errors.New("eval: give either --hyp or --model (with --src)")
	}
	paired := ""
	switch {
	case o.PairedBS && o.PairedAR:
		return errors.New("eval: give --paired-bs or --paired-ar, not both")
	case o.PairedBS:
		paired = PairedBootstrap
	case o.PairedAR:
		paired = PairedRandomization
	}
	if paired != "" && len(o.Hyps) < 2 {
		return fmt.Errorf("eval: --paired-%s needs two --hyp files or more; the first is the baseline", paired)
	}
	if o.Resamples < 1 || o.Resamples > MaxResamples {
		return fmt.Errorf("eval: --resamples is %d; want 1 to %d (default %d, as sacreBLEU's)", o.Resamples, MaxResamples, DefaultResamples)
	}
	if o.Trials < 1 || o.Trials > MaxTrials {
		return fmt.Errorf("eval: --trials is %d; want 1 to %d (default %d, as sacreBLEU's)", o.Trials, MaxTrials, DefaultTrials)
	}
	if len(o.Models) > 0 && o.Src == "" {
		return errors.New("eval: --model needs --src")
	}
	if o.Format != "text" && o.Format != "json" {
		return fmt.Errorf("eval: --format is %q; want text or json", o.Format)
	}
	if o.Search.NBestGiven && (len(o.Models) == 0 || o.Output == "") {
		return errors.New("eval: --n-best N writes the N best translations of each sentence to --output, as translate does; give --model, --src and --output FILE, or drop --n-best (eval scores the best translation)")
	}
	stdin := 0
	for _, path := range append(append([]string{o.Src}, o.Refs...), o.Hyps...) {
		if path == "-" {
			stdin++
		}
	}
	if stdin > 1 {
		return errors.New("eval: only one of --hyp, --ref and --src can read standard input (-)")
	}
	if o.Perplexity && len(o.Models) == 0 {
		return errors.New("eval: --perplexity needs --model and --src")
	}
	if o.Perplexity && len(o.Models) > 1 {
		return fmt.Errorf("eval: --perplexity scores the references under one model, and %d --model flags make an ensemble; give one --model for the perplexity", len(o.Models))
	}
	if o.Output != "" {
		if len(o.Models) == 0 {
			return errors.New("eval: --output needs --model")
		}
		inputs := append([]NamedPath{{Role: "--src", Path: o.Src}}, namedPaths("--model", o.Models)...)
		for _, ref := range o.Refs {
			if ref != "-" {
				inputs = append(inputs, NamedPath{Role: "--ref", Path: ref})
			}
		}
		if err := CheckOutputs([]NamedPath{{Role: "--output", Path: o.Output, Example: "translations.txt"}}, inputs); err != nil {
			return err
		}
	}
	req := EvalRequest{TokLC: o.TokLC, Metrics: o.Metrics, Perplexity: o.Perplexity, Version: o.Version,
		Confidence: o.Confidence, Paired: paired, Resamples: o.Resamples, Trials: o.Trials, Seed: o.Seed,
		Warn: o.Stderr}
	var fs files
	defer fs.close(&err)
	for _, path := range o.Refs {
		ref, err := fs.open(path, o.Stdin)
		if err != nil {
			return err
		}
		req.Refs = append(req.Refs, ref)
	}
	for _, path := range o.Hyps {
		hyp, err := fs.open(path, o.Stdin)
		if err != nil {
			return err
		}
		req.Hyps = append(req.Hyps, hyp)
	}
	if len(o.Models) > 0 {
		ck, ens, err := LoadModels(o.Models)
		if err != nil {
			return err
		}
		req.Model, req.Lowercase = ck.Model, ck.Config.Data.Lowercase
		if req.Decode, err = o.Search.Options(o.Stderr, o.Models[0], ck, ens); err != nil {
			return err
		}
		req.LengthLimit = o.Search.lengthLimit(ck.Config)
		if req.Src, err = fs.open(o.Src, o.Stdin); err != nil {
			return err
		}
		if o.Output != "" {
			if req.Output, err = fs.create(o.Output); err != nil {
				return err
			}
		}
	}
	if len(o.Models) > 0 && len(o.Hyps) == 0 {
		name, path := o.Src, o.Src
		if path == "-" {
			name, path = "standard input", ""
		}
		translating := o.startPhase("translating "+name, inputLines(path, o.Stdin), "sentence")
		defer translating.End()
		req.Decode.Progress = translating
	}
	res, err := Eval(ctx, req)
	if err != nil {
		return err
	}
	if o.Format == "json" {
		return res.WriteJSON(o.Stdout)
	}
	res.Report(o.Stdout)
	return nil
}
