package main

import (
	"fmt"

	"github.com/attend-nmt/attend/app"
	"github.com/attend-nmt/attend/decoder"
	"github.com/attend-nmt/attend/internal/bound"
	"github.com/attend-nmt/attend/kernels"
	"github.com/attend-nmt/attend/lexicon"
	"github.com/attend-nmt/attend/model"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// decodeFlags are the search flags `translate`, `eval`, `heatmap` and `serve` share.
type decodeFlags struct {
	app.SearchFlags
	bf16 bool // --bf16, deprecated: false is --precision float32
}

// register adds the search flags and --n-best.
func (d *decodeFlags) register(fl *pflag.FlagSet) {
	d.registerSearch(fl)
	intVar(fl, &d.NBest, "n-best", 0, bound.AtLeast(1, "at most --beam"), "write the N best translations of each sentence with their scores (N ≤ --beam)")
}

// registerSearch adds the flags that choose the translation: all but --n-best.
func (d *decodeFlags) registerSearch(fl *pflag.FlagSet) {
	intVar(fl, &d.MaxLen, "max-len", 0, model.KeyRange("decode.max_len"), "longest translation in tokens (default: the checkpoint's decode.max_len)")
	floatVar(fl, &d.MaxLenRatio, "max-len-ratio", 0, decoder.LengthRatioRange(), fmt.Sprintf("also at most this many times the source length in tokens, up to %d (0: no such limit)", decoder.MaxLengthRatio))
	intVar(fl, &d.Batch, "batch", 0, model.KeyRange("decode.batch"), "sentences per batch (default: the checkpoint's decode.batch)")
	intVar(fl, &d.Beam, "beam", app.DefaultBeam, bound.AtLeast(1, "1: greedy search"), "beam width; 1 is greedy search (at most the model's target vocabulary: a wider beam is cut to it)")
	floatVar(fl, &d.Alpha, "alpha", 0, decoder.AlphaRange(), fmt.Sprintf("GNMT length penalty, 0 to %d: rank by log p / ((5+|Y|)/6)^alpha (0: plain log p; default: the checkpoint's decode.alpha)", decoder.MaxAlpha))
	floatVar(fl, &d.Beta, "beta", 0, decoder.BetaRange(), fmt.Sprintf("GNMT coverage penalty weight, 0 to %d: add beta·Σ log min(attention to each source word, 1)", decoder.MaxBeta))
	fl.BoolVar(&d.ReplaceUnk, "replace-unk", false, "replace each <unk> by the source word it attended to most")
	fl.StringVar((*string)(&d.Precision), "precision", string(kernels.PrecisionAuto), "number format of the output layer's products: auto (bfloat16 where it is faster than float32 here: Intel's CPUs with AMX, AMD's with AVX512-BF16), float32, bf16 or bf16x3; in bfloat16, greedy search rescores the near-best words in float64, which picks float64's best word, and beam search of one model without --shortlist rescores every word that can be among a hypothesis's best, so that scores differ from exact ones only by a bounded error in the normalisation; `attend version` says what auto chooses here")
	fl.BoolVar(&d.bf16, "bf16", true, "deprecated: --bf16=false is --precision float32")
	_ = fl.MarkHidden("bf16") // (not MarkDeprecated, whose note cobra prints to stdout, among the translations)
	fl.IntVar(&d.Threads, "threads", 0, "CPU threads (default: every core)")
	intVar(fl, &d.Layer, "layer", 0, bound.AtLeast(0, "0: the checkpoint's model.attention_layer"), "with a Transformer: report the attention of decoder block N, 1 to model.layers (default: the checkpoint's model.attention_layer)")
	fl.StringVar(&d.Shortlist, "shortlist", "", fmt.Sprintf("score only a lexical shortlist: F,K = the F most frequent target words and the K likeliest translations of each source word, of the %d the lexicon keeps (K at most that; e.g. 100,20)", lexicon.DefaultOptions().Keep))
}

// given is the search settings with the flags that cmd's command line gave marked as given. A deprecated --bf16
// is read as --precision, with a note to cmd's stderr.
func (d decodeFlags) given(cmd *cobra.Command) app.SearchFlags {
	fl, s := cmd.Flags(), d.SearchFlags
	if fl.Changed("bf16") {
		fmt.Fprintln(cmd.ErrOrStderr(), "note: --bf16 is deprecated: --bf16=false is --precision float32")
	}
	s.MaxLenGiven, s.BatchGiven, s.NBestGiven = fl.Changed("max-len"), fl.Changed("batch"), fl.Changed("n-best")
	s.AlphaGiven, s.BetaGiven = fl.Changed("alpha"), fl.Changed("beta")
	if !d.bf16 && !fl.Changed("precision") {
		s.Precision = kernels.PrecisionFloat32
	}
	return s
}

// modelFlagHelp is the help of --model in the commands that translate with an ensemble when it is repeated.
const modelFlagHelp = "checkpoint to translate with (required); repeat it to translate with an ensemble of the models, which must read and write the same vocabularies (the first model's attention is reported)"
