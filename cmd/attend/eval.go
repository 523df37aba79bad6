package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"

	"github.com/attend-nmt/attend/app"
	"github.com/attend-nmt/attend/data"
	"github.com/spf13/cobra"
)

// evalOptions is everything `attend eval` reads from its command line.
type evalOptions struct {
	src, output, format string
	models, hyps, refs  []string // models: --model, one or several (an ensemble)
	tokLC, perplexity   bool
	confidence          bool
	pairedBS, pairedAR  bool
	resamples, trials   int
	seed                uint64
	metrics             []string
	decode              decodeFlags
}

func newEvalCmd() *cobra.Command {
	var o evalOptions
	cmd := &cobra.Command{
		Use:   "eval --ref R... (--hyp H... | --model CKPT [--model CKPT...] --src S)",
		Short: "Score translations: corpus BLEU and chrF, as sacreBLEU computes them",
		Long: `Eval scores hypotheses (--hyp, one per line) against references (--ref, one per line), or first translates
--src with --model (several --model flags translate with their ensemble, as translate does). It prints each score in sacreBLEU's text format with its signature:

  BLEU|nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:attend-… = 34.76 65.2/41.0/27.2/18.5 (BP = …)
  chrF2|nrefs:1|case:mixed|eff:yes|nc:6|nw:0|space:no|version:attend-… = 58.21

or, with --format json, as sacreBLEU's JSON: an object per score with "name", "score", "signature",
"verbose_score" and the signature's fields. "-" reads a file from standard input: attend translate ... | attend
eval --hyp - --ref ref.txt. Several --ref files are several references of each sentence (nrefs:N), scored as
sacreBLEU scores them: BLEU clips each n-gram to the most any one reference has and takes the reference length
closest to the hypothesis', chrF takes the reference with the best sentence score.

Eval warns (on standard error) when the hypotheses have no capital letter but the references do, or when one
side is tokenized (a space before punctuation: "a dog .", "man 's") and the other is not: both cost BLEU points
that say nothing about the translation. The warning says what to do: --tok-lc, or detokenized text.

BLEU is sacreBLEU's default (13a tokenization, case kept, exp smoothing); --tok-lc gives instead the
tokenized-lowercased BLEU common in the Multi30k literature (attend's \w+|[^\w\s] tokens, lowercased, no
smoothing), which is what training logs report (train.valid_bleu). chrF is chrF2 (character 6-grams, β = 2). --perplexity (with
--model and --src) adds the perplexity of the (first) references under the model, by teacher forcing; a pair with a side
longer than --max-len tokens (default: the larger of the checkpoint's data.max_len and decode.max_len) is left
out of it, with a warning naming its line.

A model trained with data.lowercase writes lowercase text: its mixed-case BLEU and chrF count every capital as
an error (eval warns). Score it with --tok-lc, or compare like with like.

Is a difference real, or the luck of the test set? --confidence adds to each score its mean and 95% interval
over 1,000 bootstrap resamples of the test set, as sacreBLEU's --confidence does: "34.76 (μ = 34.76 ± 1.55)".
Several --hyp files score several systems in a table; --paired-bs also tests each against the first (the
baseline) by paired bootstrap resampling (Koehn 2004), as sacreBLEU's --paired-bs does, and prints each
p-value: below 0.05, a difference this large would be rare if the two systems were equally good. It also prints
the share of resamples each system wins. The p-value centres the signed differences, so a system against itself
gets p = 1; sacreBLEU centres their sizes, and its figures differ a little. --paired-ar tests by approximate
randomization instead (Riezler and Maxwell 2005; sacreBLEU's --paired-ar): 10,000 trials that swap each
sentence between the two systems at random. The resamples and trials are drawn from --seed, so a run repeats
exactly (not sacreBLEU's draws, which come from numpy).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runEval(cmd, o) },
	}
	fl := cmd.Flags()
	fl.StringArrayVar(&o.hyps, "hyp", nil, "hypotheses, one per line (- reads standard input); repeat for several systems (the first is --paired-bs's baseline)")
	fl.StringArrayVar(&o.refs, "ref", nil, "references, one per line (required; repeat for several references of each sentence; - reads standard input)")
	fl.StringArrayVarP(&o.models, "model", "m", nil, "checkpoint that translates --src (instead of --hyp); repeat it to translate with an ensemble of the models, which must read and write the same vocabularies")
	fl.StringVar(&o.src, "src", "", "source sentences, one per line, for --model")
	fl.StringVarP(&o.output, "output", "o", "", "with --model: also write the translations (with --n-best, the n-best lists) to this file")
	fl.StringVar(&o.format, "format", "text", "text (sacreBLEU's lines, or a table for several --hyp) or json (sacreBLEU's --format json)")
	fl.BoolVar(&o.tokLC, "tok-lc", false, "BLEU on lowercased regex tokens without smoothing (what training logs report)")
	fl.BoolVar(&o.perplexity, "perplexity", false, "also the references' perplexity under --model")
	fl.StringSliceVar(&o.metrics, "metrics", []string{app.MetricBLEU, app.MetricChrF}, "scores to compute: bleu, chrf")
	fl.BoolVar(&o.confidence, "confidence", false, "add each score's bootstrap mean and 95% interval")
	fl.BoolVar(&o.pairedBS, "paired-bs", false, "test each --hyp after the first against the first by paired bootstrap resampling")
	fl.BoolVar(&o.pairedAR, "paired-ar", false, "test each --hyp after the first against the first by approximate randomization")
	fl.IntVar(&o.resamples, "resamples", app.DefaultResamples, fmt.Sprintf("bootstrap resamples for --confidence, --paired-bs and the intervals of --paired-ar (at most %d)", app.MaxResamples))
	fl.IntVar(&o.trials, "trials", app.DefaultTrials, fmt.Sprintf("approximate randomization trials for --paired-ar (at most %d)", app.MaxTrials))
	fl.Uint64Var(&o.seed, "seed", 12345, "seed of the bootstrap resamples and randomization trials")
	o.decode.register(fl)
	_ = cmd.MarkFlagRequired("ref")
	return cmd
}

func runEval(cmd *cobra.Command, o evalOptions) (err error) {
	if (len(o.hyps) == 0) == (len(o.models) == 0) {
		return errors.New("eval: give either --hyp or --model (with --src)")
	}
	paired := ""
	switch {
	case o.pairedBS && o.pairedAR:
		return errors.New("eval: give --paired-bs or --paired-ar, not both")
	case o.pairedBS:
		paired = app.PairedBootstrap
	case o.pairedAR:
		paired = app.PairedRandomization
	}
	if paired != "" && len(o.hyps) < 2 {
		return fmt.Errorf("eval: --paired-%s needs two --hyp files or more; the first is the baseline", paired)
	}
	if o.resamples < 1 || o.resamples > app.MaxResamples {
		return fmt.Errorf("eval: --resamples is %d; want 1 to %d (default %d, as sacreBLEU's)", o.resamples, app.MaxResamples, app.DefaultResamples)
	}
	if o.trials < 1 || o.trials > app.MaxTrials {
		return fmt.Errorf("eval: --trials is %d; want 1 to %d (default %d, as sacreBLEU's)", o.trials, app.MaxTrials, app.DefaultTrials)
	}
	if len(o.models) > 0 && o.src == "" {
		return errors.New("eval: --model needs --src")
	}
	if o.format != "text" && o.format != "json" {
		return fmt.Errorf("eval: --format is %q; want text or json", o.format)
	}
	if cmd.Flags().Changed("n-best") && (len(o.models) == 0 || o.output == "") {
		return errors.New("eval: --n-best N writes the N best translations of each sentence to --output, as translate does; give --model, --src and --output FILE, or drop --n-best (eval scores the best translation)")
	}
	stdin := 0
	for _, path := range append(append([]string{o.src}, o.refs...), o.hyps...) {
		if path == "-" {
			stdin++
		}
	}
	if stdin > 1 {
		return errors.New("eval: only one of --hyp, --ref and --src can read standard input (-)")
	}
	if o.perplexity && len(o.models) == 0 {
		return errors.New("eval: --perplexity needs --model and --src")
	}
	if o.perplexity && len(o.models) > 1 {
		return fmt.Errorf("eval: --perplexity scores the references under one model, and %d --model flags make an ensemble; give one --model for the perplexity", len(o.models))
	}
	if o.output != "" {
		if len(o.models) == 0 {
			return errors.New("eval: --output needs --model")
		}
		inputs := append([]app.NamedPath{{Role: "--src", Path: o.src}}, modelInputs(o.models)...)
		for _, ref := range o.refs {
			if ref != "-" {
				inputs = append(inputs, app.NamedPath{Role: "--ref", Path: ref})
			}
		}
		if err := app.CheckOutputs([]app.NamedPath{{Role: "--output", Path: o.output, Example: "translations.txt"}}, inputs); err != nil {
			return err
		}
	}
	req := app.EvalRequest{TokLC: o.tokLC, Metrics: o.metrics, Perplexity: o.perplexity, Version: attendVersion(),
		Confidence: o.confidence, Paired: paired, Resamples: o.resamples, Trials: o.trials, Seed: o.seed,
		Warn: cmd.ErrOrStderr()}
	var closers []io.Closer
	open := func(path string) (app.NamedReader, error) {
		if path == "-" {
			return app.NamedReader{R: cmd.InOrStdin(), Name: "stdin"}, nil
		}
		f, err := data.Open(path)
		if err != nil {
			return app.NamedReader{}, err
		}
		closers = append(closers, f)
		return app.NamedReader{R: f, Name: path}, nil
	}
	defer func() {
		for _, c := range closers {
			c.Close()
		}
	}()
	for _, path := range o.refs {
		ref, err := open(path)
		if err != nil {
			return err
		}
		req.Refs = append(req.Refs, ref)
	}
	for _, path := range o.hyps {
		hyp, err := open(path)
		if err != nil {
			return err
		}
		req.Hyps = append(req.Hyps, hyp)
	}
	if len(o.models) > 0 {
		ck, ens, err := loadModels(o.models)
		if err != nil {
			return err
		}
		req.Model, req.Lowercase = ck.Model, ck.Config.Data.Lowercase
		if req.Decode, err = o.decode.options(cmd, o.models[0], ck, ens); err != nil {
			return err
		}
		req.LengthLimit = app.LengthLimit(ck.Config)
		if o.decode.maxLen > 0 {
			req.LengthLimit = o.decode.maxLen
		}
		if req.Src, err = open(o.src); err != nil {
			return err
		}
		if o.output != "" {
			f, err := os.Create(o.output)
			if err != nil {
				return err
			}
			defer func() {
				if cerr := f.Close(); cerr != nil && err == nil {
					err = cerr
				}
			}()
			req.Output = f
		}
	}
	if len(o.models) > 0 && len(o.hyps) == 0 {
		name, path := o.src, o.src
		if path == "-" {
			name, path = "standard input", ""
		}
		translating := progressOf(cmd).start("translating "+name, inputLines(path, cmd.InOrStdin()), "sentence")
		defer translating.End()
		req.Decode.Progress = translating
	}
	res, err := app.Eval(cmd.Context(), req)
	if err != nil {
		return err
	}
	if o.format == "json" {
		return res.WriteJSON(cmd.OutOrStdout())
	}
	res.Report(cmd.OutOrStdout())
	return nil
}

// attendVersion names this build for signatures: "attend-" and the module version ("attend-devel" when
// built from a work tree).
func attendVersion() string {
	if info, ok := debug.ReadBuildInfo(); ok && info.Main.Version != "" && info.Main.Version != "(devel)" {
		return "attend-" + info.Main.Version
	}
	return "attend-devel"
}
