package main

import (
	"fmt"
	"io"
	"os"

	"github.com/attend-nmt/attend/align"
	"github.com/attend-nmt/attend/app"
	"github.com/attend-nmt/attend/data"
	"github.com/attend-nmt/attend/internal/plural"
	"github.com/attend-nmt/attend/model"
	"github.com/attend-nmt/attend/wordalign"
	"github.com/spf13/cobra"
)

// alignOptions is everything `attend align` reads from its command line.
type alignOptions struct {
	model, reverse, sym, output, gold string
	corpus                            app.Corpus
	oneBased, tokenized, decoderAttn  bool
	threshold                         float64
	batch, maxLen                     int
	// --statistical
	statistical, keepCase, noProgress bool
	iterations, threads               int
}

func newAlignCmd() *cobra.Command {
	var o alignOptions
	cmd := &cobra.Command{
		Use:   "align (--model CKPT | --statistical) (--src FILE --tgt FILE | --data FILE) [--output FILE] [--gold FILE]",
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
-d -o -v and defaults) on the corpus itself, in both directions, on every core, and combines the two
directions' most probable links by --sym (default grow-diag-final-and; forward or reverse for one direction
alone). Words are lowercased first unless --keep-case. Give it as much parallel text as you have: sentences to
align can be appended to a larger corpus, and their lines picked from the output.

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
		RunE: func(cmd *cobra.Command, _ []string) error { return runAlign(cmd, o) },
	}
	fl := cmd.Flags()
	fl.StringVarP(&o.model, "model", "m", "", "source→target checkpoint")
	fl.BoolVar(&o.statistical, "statistical", false, "align with the built-in statistical aligner (fast_align's model) instead of a model")
	fl.StringVar(&o.corpus.Src, "src", "", "source sentences, one per line")
	fl.StringVar(&o.corpus.Tgt, "tgt", "", "target sentences, line-aligned with --src")
	fl.StringVar(&o.corpus.TSV, "data", "", `or: one file of "source<TAB>target" or "source ||| target" lines`)
	fl.BoolVar(&o.tokenized, "tokenized", false, "the text is tokenized: its words are split on white space only")
	fl.StringVarP(&o.output, "output", "o", "", "alignment file to write (default: standard output)")
	fl.StringVar(&o.gold, "gold", "", "gold alignment file (Pharaoh, sure i-j and possible ipj links) to score against")
	fl.BoolVar(&o.oneBased, "one-based", false, "the gold file's positions count from 1")
	fl.StringVar(&o.reverse, "reverse", "", "target→source checkpoint, for symmetrization")
	fl.StringVar(&o.sym, "sym", "", "combine the directions by grow-diag-final-and, grow-diag-final, grow-diag, intersection or union, or take forward or reverse alone (default: grow-diag-final with --reverse, grow-diag-final-and with --statistical)")
	fl.Float64Var(&o.threshold, "threshold", 0, "link every weight at or above this instead of the argmax (0: argmax)")
	fl.BoolVar(&o.decoderAttn, "decoder-attention", false, "with a model trained with model.full_context_alignment: link by the decoder's attention, not the alignment attention")
	fl.IntVar(&o.batch, "batch", 64, "sentences per batch")
	fl.IntVar(&o.iterations, "iterations", wordalign.DefaultOptions().Iterations, "with --statistical: EM iterations per direction (fast_align's -I counts one more)")
	fl.IntVar(&o.threads, "threads", 0, "CPU threads (default: every core)")
	fl.BoolVar(&o.keepCase, "keep-case", false, "with --statistical: do not lowercase the words")
	fl.BoolVar(&o.noProgress, "no-progress", false, "with --statistical: no progress bar on a terminal, only a line per EM iteration")
	fl.IntVar(&o.maxLen, "max-len", 0, "with --model: skip, with a warning, the pairs with a side longer than this many tokens (default: the larger of the checkpoint's data.max_len and decode.max_len)")
	return cmd
}

func runAlign(cmd *cobra.Command, o alignOptions) (err error) {
	fl := cmd.Flags()
	modelOnly := []string{"reverse", "threshold", "batch", "max-len", "decoder-attention"}
	statisticalOnly := []string{"iterations", "keep-case", "no-progress"}
	switch {
	case o.statistical && o.model != "":
		return fmt.Errorf("give either --model or --statistical, not both")
	case !o.statistical && o.model == "":
		return fmt.Errorf("give --model CKPT to align by a model's attention, or --statistical to align without one")
	case o.corpus.Empty():
		return fmt.Errorf("give the sentence pairs: --src FILE --tgt FILE, or --data FILE")
	case o.threshold < 0 || o.threshold > 1:
		return fmt.Errorf("--threshold is %g; want a weight from 0 (argmax) to 1", o.threshold)
	case o.batch < 1:
		return fmt.Errorf("--batch is %d; want at least 1", o.batch)
	case o.iterations < 1:
		return fmt.Errorf("--iterations is %d; want at least 1", o.iterations)
	case o.threads < 0:
		return fmt.Errorf("--threads is %d; want 0 (every core) or more", o.threads)
	case fl.Changed("max-len") && o.maxLen < 1:
		return fmt.Errorf("--max-len is %d; want at least 1", o.maxLen)
	case !o.statistical && fl.Changed("sym") && o.reverse == "":
		return fmt.Errorf("--sym needs --reverse: a model trained in the other direction")
	case fl.Changed("one-based") && o.gold == "":
		return fmt.Errorf("--one-based describes the --gold file; give one")
	}
	for _, name := range statisticalOnly {
		if !o.statistical && fl.Changed(name) {
			return fmt.Errorf("--%s is an option of --statistical", name)
		}
	}
	for _, name := range modelOnly {
		if o.statistical && fl.Changed(name) {
			return fmt.Errorf("--%s is an option of alignment by a model (--model), not of --statistical", name)
		}
	}
	switch {
	case o.sym != "":
	case o.statistical:
		o.sym = string(align.GrowDiagFinalAnd)
	default:
		o.sym = string(align.GrowDiagFinal)
	}
	if err := align.Symmetrization(o.sym).Validate(); err != nil {
		return fmt.Errorf("--sym: %w", err)
	}
	if o.output == "-" {
		o.output = ""
	}
	inputs := []app.NamedPath{{Role: "--model", Path: o.model}, {Role: "--src", Path: o.corpus.Src}, {Role: "--tgt", Path: o.corpus.Tgt},
		{Role: "--data", Path: o.corpus.TSV}, {Role: "--gold", Path: o.gold}, {Role: "--reverse", Path: o.reverse}}
	if err := app.CheckOutputs([]app.NamedPath{{Role: "--output", Path: o.output, Example: "alignments.txt"}}, inputs); err != nil {
		return err
	}
	var gold [][]align.Link
	if o.gold != "" {
		f, err := data.Open(o.gold)
		if err != nil {
			return err
		}
		gold, err = align.ReadPharaoh(f, o.gold, o.oneBased)
		f.Close()
		if err != nil {
			return err
		}
	}
	output, report := cmd.OutOrStdout(), cmd.ErrOrStderr()
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
		output, report = f, cmd.OutOrStdout()
	}
	var scores align.Scores
	if o.statistical {
		scores, err = alignStatistical(cmd, o, gold, output)
	} else {
		scores, err = alignByModel(cmd, o, gold, output)
	}
	if err != nil {
		return err
	}
	if o.gold != "" {
		printScores(report, scores)
	}
	return nil
}

// alignByModel aligns by the attention of --model (and --reverse).
func alignByModel(cmd *cobra.Command, o alignOptions, gold [][]align.Link, output io.Writer) (align.Scores, error) {
	ck, err := model.Load(o.model)
	if err != nil {
		return align.Scores{}, err
	}
	req := app.AlignRequest{Model: ck.Model, Lowercase: ck.Config.Data.Lowercase, Corpus: o.corpus, Tokenized: o.tokenized,
		Threshold: o.threshold, DecoderAttention: o.decoderAttn, Batch: o.batch, Output: output, Gold: gold, GoldName: o.gold, OneBasedGold: o.oneBased,
		MaxLen: app.LengthLimit(ck.Config), Warn: cmd.ErrOrStderr(), Progress: progressOf(cmd)}
	if o.maxLen > 0 {
		req.MaxLen = o.maxLen
	}
	if o.reverse != "" {
		rev, err := model.Load(o.reverse)
		if err != nil {
			return align.Scores{}, err
		}
		req.Reverse, req.Sym = rev.Model, align.Symmetrization(o.sym)
	}
	app.UseThreads(cmd.ErrOrStderr(), o.threads, "--threads")
	return app.Align(cmd.Context(), req)
}

// alignStatistical aligns with the built-in statistical aligner, showing its progress on standard error.
func alignStatistical(cmd *cobra.Command, o alignOptions, gold [][]align.Link, output io.Writer) (align.Scores, error) {
	var tok data.Tokenizer = data.NewRegexTokenizer(!o.keepCase)
	if o.tokenized {
		tok = data.WhitespaceTokenizer{Lowercase: !o.keepCase}
	}
	opts := wordalign.DefaultOptions()
	opts.Iterations, opts.Workers = o.iterations, app.UseThreads(cmd.ErrOrStderr(), o.threads, "--threads")
	phases := progressOf(cmd)
	phases.quiet = phases.quiet || o.noProgress
	progress := &app.AlignerProgress{Phases: phases, Stats: cmd.ErrOrStderr()}
	opts.Progress = progress.Report
	defer progress.End()
	return app.AlignStatistical(cmd.Context(), app.StatisticalAlignRequest{Corpus: o.corpus, Tokenizer: tok, Options: opts,
		Sym: align.Symmetrization(o.sym), Output: output, Gold: gold, GoldName: o.gold, OneBasedGold: o.oneBased})
}

// printScores prints alignment scores on one line.
func printScores(w io.Writer, s align.Scores) {
	fmt.Fprintf(w, "precision %.4f  recall %.4f  AER %.4f  (%s: %s, %d sure, %d hit sure, %d hit possible)\n",
		s.Precision(), s.Recall(), s.AER(), plural.Count(s.Sentences, "sentence pair"), plural.Count(s.Predicted, "predicted link"), s.Sure, s.HitSure, s.HitPossible)
}
