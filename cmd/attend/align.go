package main

import (
	"fmt"

	"github.com/attend-nmt/attend/app"
	"github.com/attend-nmt/attend/internal/bound"
	"github.com/attend-nmt/attend/model"
	"github.com/attend-nmt/attend/wordalign"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

func newAlignCmd() *cobra.Command {
	var o app.AlignOptions
	var noProgress bool
	cmd := &cobra.Command{
		Use:   "align (--model CKPT | --statistical | --train DIR) (--src FILE --tgt FILE | --data FILE) [--output FILE] [--gold FILE]",
		Short: "Word alignments, from a model's attention or a statistical aligner, in Pharaoh format, scored against gold",
		Long: `Align reads line-aligned source and target files (or one file, --data, of "source<TAB>target" or
"source ||| target" lines, as fast_align reads) and writes one line per sentence pair in Pharaoh format: "i-j"
pairs, 0-based, source position first (--output, or standard output).

With --model, it scores each target sentence with teacher forcing and links every target word to the source
word it attended to most (or, with --threshold W, to every source word whose attention weight is at least W).
</s> is never aligned. A model trained with model.full_context_alignment links by its alignment attention, whose
query also knows the target word being aligned (--decoder-attention: by the decoder's attention instead).
With --reverse CKPT (a model trained in the other direction) the two directions are
combined by --sym (default grow-diag-final). A model trained on subwords (data.subword bpe) links subwords, and
two words are linked when any of their subwords are (OpenNMT-py's convention): the output counts words, so it
scores against word-level gold.

With --statistical, no model is needed: it trains fast_align's model (Dyer et al. 2013: IBM Model 2 with a
prior favouring the diagonal, its tension optimised, a Dirichlet prior on the lexical table; fast_align's
-d -o -v and defaults) on the corpus itself, then by default (--statistical-model hmm) five iterations of the
HMM alignment model from its lexical table (Vogel et al. 1996, as GIZA++ has it: jumps by distance, an empty
word), in both directions, on every core, and combines the two directions' most probable links by --sym (default grow-diag-final-and; forward or reverse for one direction
alone). Words are lowercased first unless --keep-case. Give it as much parallel text as you have: sentences to
align can be appended to a larger corpus, and their lines picked from the output.

With --train DIR, it is an aligner in one command, run like fast_align: it links the corpus with the
statistical aligner, trains on it a model in each direction (source→target and target→source; the preset
configs/align.yaml: the small model on lowercased words, general attention after the decoder reads the
previous word, a full-context alignment attention guided by the statistical links, 15 epochs, --epochs to
change) and writes the links of the two models' alignment attention: by default those whose weight is at
least 0.25 in both directions (--sym intersection --threshold 0.25, the best on the Hansards gold). DIR keeps
the models (forward.ckpt, reverse.ckpt) and their statistical links (forward.align, reverse.align): the same
command run again after an interruption goes on where it stopped, and on a finished DIR it only aligns. DIR is
of one corpus (DIR/corpus.sha256 says which): another corpus is refused there.

--tokenized reads the text as already tokenized: its words are split on white space only, so that the link
positions are those of the given tokens ("Mr." is one word; attend's own tokenizer would make it two). A
model's tokenizer then splits each word further, and links and attention are brought back to the words.

With --gold FILE (Pharaoh, "i-j" sure and "ipj" possible links; --one-based if its positions count from 1) it
prints precision, recall and alignment error rate (Och and Ney 2003) over the corpus, or over its first lines
when the gold has fewer lines (test sentences put first in a larger corpus). A gold link beyond its sentence
pair is an error naming the line.

With --model, a pair with a side longer than --max-len tokens (default: the larger of the checkpoint's
data.max_len and decode.max_len) is skipped with a warning naming its line: its output line is empty and it is
not scored.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.Streams, o.Given = streamsOf(cmd), map[string]bool{}
			cmd.Flags().Visit(func(f *pflag.Flag) { o.Given[f.Name] = true })
			if noProgress {
				o.Progress = progressOf(cmd).quietened()
			}
			if o.Train != "" {
				o.Recorder = newRecorder(cmd.ErrOrStderr(), progressOf(cmd), noProgress)
			}
			return app.RunAlign(cmd.Context(), o)
		},
	}
	fl := cmd.Flags()
	fl.StringVarP(&o.Model, "model", "m", "", "source→target checkpoint")
	fl.BoolVar(&o.Statistical, "statistical", false, "align with the built-in statistical aligner (fast_align's model, then the HMM) instead of a model")
	fl.StringVar(&o.Train, "train", "", "train the two models that align (source→target, target→source) in this directory, resuming what it holds, and align by them")
	intVar(fl, &o.Epochs, "epochs", 0, model.KeyRange("train.epochs"), "with --train: epochs of each model (default: the preset's 15)")
	fl.StringVar(&o.Corpus.Src, "src", "", "source sentences, one per line")
	fl.StringVar(&o.Corpus.Tgt, "tgt", "", "target sentences, line-aligned with --src")
	fl.StringVar(&o.Corpus.TSV, "data", "", `or: one file of "source<TAB>target" or "source ||| target" lines`)
	fl.BoolVar(&o.Tokenized, "tokenized", false, "the text is tokenized: its words are split on white space only")
	fl.StringVarP(&o.Output, "output", "o", "", "alignment file to write (default: standard output)")
	fl.StringVar(&o.Gold, "gold", "", "gold alignment file (Pharaoh, sure i-j and possible ipj links) to score against")
	fl.BoolVar(&o.OneBased, "one-based", false, "the gold file's positions count from 1")
	fl.StringVar(&o.Reverse, "reverse", "", "target→source checkpoint, for symmetrization")
	fl.StringVar(&o.Sym, "sym", "", "combine the directions by grow-diag-final-and, grow-diag-final, grow-diag, intersection or union, or take forward or reverse alone (default: grow-diag-final with --reverse, grow-diag-final-and with --statistical, intersection with --train)")
	floatVar(fl, &o.Threshold, "threshold", 0, bound.Between(0, 1, "0: the argmax"), fmt.Sprintf("link every weight at or above this instead of the argmax (0: argmax; default 0, %g with --train)", app.AlignerThreshold))
	fl.BoolVar(&o.DecoderAttn, "decoder-attention", false, "with a model trained with model.full_context_alignment: link by the decoder's attention, not the alignment attention")
	fl.IntVar(&o.Batch, "batch", 64, "sentences per batch")
	fl.IntVar(&o.Layer, "layer", 0, "with a Transformer: link by the attention of decoder block N, 1 to model.layers (default: the checkpoint's model.attention_layer)")
	fl.StringVar(&o.StatisticalModel, "statistical-model", wordalign.DefaultModel, "with --statistical: hmm (fast_align's model, then the HMM) or fast_align (its model alone)")
	fl.IntVar(&o.Iterations, "iterations", wordalign.DefaultOptions().Iterations, "with --statistical: EM iterations of fast_align's model per direction (fast_align's -I counts one more)")
	fl.IntVar(&o.Threads, "threads", 0, "CPU threads (default: every core)")
	fl.BoolVar(&o.KeepCase, "keep-case", false, "with --statistical: do not lowercase the words")
	fl.BoolVar(&noProgress, "no-progress", false, "no progress bar on a terminal, only lines (with --statistical a line per EM iteration, with --train the training log)")
	fl.IntVar(&o.MaxLen, "max-len", 0, "with --model: skip, with a warning, the pairs with a side longer than this many tokens (default: the larger of the checkpoint's data.max_len and decode.max_len)")
	return cmd
}
