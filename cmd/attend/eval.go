package main

import (
	"fmt"
	"runtime/debug"

	"github.com/attend-nmt/attend/app"
	"github.com/spf13/cobra"
)

func newEvalCmd() *cobra.Command {
	var o app.EvalOptions
	var decode decodeFlags
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
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.Streams, o.Search, o.Version = streamsOf(cmd), decode.given(cmd), attendVersion()
			return app.RunEval(cmd.Context(), o)
		},
	}
	fl := cmd.Flags()
	fl.StringArrayVar(&o.Hyps, "hyp", nil, "hypotheses, one per line (- reads standard input); repeat for several systems (the first is --paired-bs's baseline)")
	fl.StringArrayVar(&o.Refs, "ref", nil, "references, one per line (required; repeat for several references of each sentence; - reads standard input)")
	fl.StringArrayVarP(&o.Models, "model", "m", nil, "checkpoint that translates --src (instead of --hyp); repeat it to translate with an ensemble of the models, which must read and write the same vocabularies")
	fl.StringVar(&o.Src, "src", "", "source sentences, one per line, for --model")
	fl.StringVarP(&o.Output, "output", "o", "", "with --model: also write the translations (with --n-best, the n-best lists) to this file")
	fl.StringVar(&o.Format, "format", "text", "text (sacreBLEU's lines, or a table for several --hyp) or json (sacreBLEU's --format json)")
	fl.BoolVar(&o.TokLC, "tok-lc", false, "BLEU on lowercased regex tokens without smoothing (what training logs report)")
	fl.BoolVar(&o.Perplexity, "perplexity", false, "also the references' perplexity under --model")
	fl.StringSliceVar(&o.Metrics, "metrics", []string{app.MetricBLEU, app.MetricChrF}, "scores to compute: bleu, chrf")
	fl.BoolVar(&o.Confidence, "confidence", false, "add each score's bootstrap mean and 95% interval")
	fl.BoolVar(&o.PairedBS, "paired-bs", false, "test each --hyp after the first against the first by paired bootstrap resampling")
	fl.BoolVar(&o.PairedAR, "paired-ar", false, "test each --hyp after the first against the first by approximate randomization")
	fl.IntVar(&o.Resamples, "resamples", app.DefaultResamples, fmt.Sprintf("bootstrap resamples for --confidence, --paired-bs and the intervals of --paired-ar (at most %d)", app.MaxResamples))
	fl.IntVar(&o.Trials, "trials", app.DefaultTrials, fmt.Sprintf("approximate randomization trials for --paired-ar (at most %d)", app.MaxTrials))
	fl.Uint64Var(&o.Seed, "seed", 12345, "seed of the bootstrap resamples and randomization trials")
	decode.register(fl)
	_ = cmd.MarkFlagRequired("ref")
	return cmd
}

// attendVersion names this build for signatures: "attend-" and the module version ("attend-devel" when
// built from a work tree).
func attendVersion() string {
	if info, ok := debug.ReadBuildInfo(); ok && info.Main.Version != "" && info.Main.Version != "(devel)" {
		return "attend-" + info.Main.Version
	}
	return "attend-devel"
}
