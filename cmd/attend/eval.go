package main

import (
	"errors"
	"io"
	"os"
	"runtime/debug"

	"github.com/attend-nmt/attend/app"
	"github.com/attend-nmt/attend/data"
	"github.com/attend-nmt/attend/model"
	"github.com/spf13/cobra"
)

// evalOptions is everything `attend eval` reads from its command line.
type evalOptions struct {
	hyp, ref, model, src, output string
	tokLC, perplexity            bool
	metrics                      []string
	decode                       decodeFlags
}

func newEvalCmd() *cobra.Command {
	var o evalOptions
	cmd := &cobra.Command{
		Use:   "eval --ref R (--hyp H | --model CKPT --src S)",
		Short: "Score translations: corpus BLEU and chrF, as sacreBLEU computes them",
		Long: `Eval scores hypotheses (--hyp, one per line) against references (--ref, one per line), or first translates
--src with --model. It prints each score in sacreBLEU's text format with its signature:

  BLEU|nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:attend-… = 34.76 65.2/41.0/27.2/18.5 (BP = …)
  chrF2|nrefs:1|case:mixed|eff:yes|nc:6|nw:0|space:no|version:attend-… = 58.21

BLEU is sacreBLEU's default (13a tokenization, case kept, exp smoothing); --tok-lc gives instead the
tokenized-lowercased BLEU of the benchmark (attend's \w+|[^\w\s] tokens, lowercased, no smoothing), which is
what training logs and the PyTorch peer report. chrF is chrF2 (character 6-grams, β = 2). --perplexity (with
--model and --src) adds the references' perplexity under the model, by teacher forcing.

A model trained with data.lowercase (the default) writes lowercase text: its mixed-case BLEU and chrF count
every capital as an error. Score it with --tok-lc, or compare like with like.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runEval(cmd, o) },
	}
	fl := cmd.Flags()
	fl.StringVar(&o.hyp, "hyp", "", "hypotheses, one per line")
	fl.StringVar(&o.ref, "ref", "", "references, one per line (required)")
	fl.StringVar(&o.model, "model", "", "checkpoint that translates --src (instead of --hyp)")
	fl.StringVar(&o.src, "src", "", "source sentences, one per line, for --model")
	fl.StringVar(&o.output, "output", "", "with --model: also write the translations to this file")
	fl.BoolVar(&o.tokLC, "tok-lc", false, "BLEU on lowercased regex tokens without smoothing (the benchmark's figure)")
	fl.BoolVar(&o.perplexity, "perplexity", false, "also the references' perplexity under --model")
	fl.StringSliceVar(&o.metrics, "metrics", []string{app.MetricBLEU, app.MetricChrF}, "scores to compute: bleu, chrf")
	o.decode.register(fl)
	_ = cmd.MarkFlagRequired("ref")
	return cmd
}

func runEval(cmd *cobra.Command, o evalOptions) (err error) {
	if (o.hyp == "") == (o.model == "") {
		return errors.New("eval: give either --hyp or --model (with --src)")
	}
	if o.model != "" && o.src == "" {
		return errors.New("eval: --model needs --src")
	}
	if o.perplexity && o.model == "" {
		return errors.New("eval: --perplexity needs --model and --src")
	}
	if o.output != "" {
		if o.model == "" {
			return errors.New("eval: --output needs --model")
		}
		if err := app.CheckOutputs([]app.NamedPath{{Role: "--output", Path: o.output}},
			[]app.NamedPath{{Role: "--src", Path: o.src}, {Role: "--ref", Path: o.ref}, {Role: "--model", Path: o.model}}); err != nil {
			return err
		}
	}
	req := app.EvalRequest{TokLC: o.tokLC, Metrics: o.metrics, Perplexity: o.perplexity, Version: attendVersion()}
	var closers []io.Closer
	open := func(path string) (app.NamedReader, error) {
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
	if req.Ref, err = open(o.ref); err != nil {
		return err
	}
	if o.hyp != "" {
		if req.Hyp, err = open(o.hyp); err != nil {
			return err
		}
	}
	if o.model != "" {
		ck, err := model.Load(o.model)
		if err != nil {
			return err
		}
		req.Model, req.Lowercase = ck.Model, ck.Config.Data.Lowercase
		if req.Decode, err = o.decode.options(cmd, o.model, ck); err != nil {
			return err
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
			req.Hyps = f
		}
	}
	res, err := app.Eval(cmd.Context(), req)
	if err != nil {
		return err
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
