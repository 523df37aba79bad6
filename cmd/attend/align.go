package main

import (
	"fmt"
	"io"
	"os"

	"github.com/attend-nmt/attend/align"
	"github.com/attend-nmt/attend/app"
	"github.com/attend-nmt/attend/data"
	"github.com/attend-nmt/attend/model"
	"github.com/spf13/cobra"
)

// alignOptions is everything `attend align` reads from its command line.
type alignOptions struct {
	model, reverse, sym, src, tgt, output, gold string
	oneBased                                    bool
	threshold                                   float64
	batch, maxLen                               int
}

func newAlignCmd() *cobra.Command {
	var o alignOptions
	cmd := &cobra.Command{
		Use:   "align --model CKPT --src FILE --tgt FILE [--output FILE] [--gold FILE]",
		Short: "Word alignments from attention, in Pharaoh format, scored against gold alignments",
		Long: `Align reads line-aligned source and target files, scores each target sentence with teacher forcing
and links every target word to the source word it attended to most (or, with --threshold W, to every source word
whose attention weight is at least W). </s> is never aligned. It writes one line per sentence pair in Pharaoh
format: "i-j" pairs, 0-based, source position first (--output, or standard output).

With --reverse CKPT (a model trained in the other direction) the two directions are combined by --sym:
intersection, union, grow-diag or grow-diag-final (the default).

A model trained on subwords (data.subword bpe) links subwords, and two words are linked when any of their
subwords are (OpenNMT-py's convention): the output counts words, so it scores against word-level gold.

With --gold FILE (Pharaoh, "i-j" sure and "ipj" possible links; --one-based if its positions count from 1) it
prints precision, recall and alignment error rate (Och and Ney 2003) over the corpus. A gold link beyond its
sentence pair is an error naming the line.

A pair with a side longer than --max-len tokens (default: the larger of the checkpoint's data.max_len and
decode.max_len) is skipped with a warning naming its line: its output line is empty and it is not scored.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runAlign(cmd, o) },
	}
	fl := cmd.Flags()
	fl.StringVar(&o.model, "model", "", "source→target checkpoint (required)")
	fl.StringVar(&o.src, "src", "", "source sentences, one per line (required)")
	fl.StringVar(&o.tgt, "tgt", "", "target sentences, line-aligned with --src (required)")
	fl.StringVar(&o.output, "output", "", "alignment file to write (default: standard output)")
	fl.StringVar(&o.gold, "gold", "", "gold alignment file (Pharaoh, sure i-j and possible ipj links) to score against")
	fl.BoolVar(&o.oneBased, "one-based", false, "the gold file's positions count from 1")
	fl.StringVar(&o.reverse, "reverse", "", "target→source checkpoint, for symmetrization")
	fl.StringVar(&o.sym, "sym", string(align.GrowDiagFinal), "with --reverse: intersection, union, grow-diag or grow-diag-final")
	fl.Float64Var(&o.threshold, "threshold", 0, "link every weight at or above this instead of the argmax (0: argmax)")
	fl.IntVar(&o.batch, "batch", 64, "sentences per batch")
	fl.IntVar(&o.maxLen, "max-len", 0, "skip, with a warning, the pairs with a side longer than this many tokens (default: the larger of the checkpoint's data.max_len and decode.max_len)")
	for _, name := range []string{"model", "src", "tgt"} {
		_ = cmd.MarkFlagRequired(name)
	}
	return cmd
}

func runAlign(cmd *cobra.Command, o alignOptions) (err error) {
	fl := cmd.Flags()
	switch {
	case o.threshold < 0 || o.threshold > 1:
		return fmt.Errorf("--threshold is %g; want a weight from 0 (argmax) to 1", o.threshold)
	case o.batch < 1:
		return fmt.Errorf("--batch is %d; want at least 1", o.batch)
	case fl.Changed("max-len") && o.maxLen < 1:
		return fmt.Errorf("--max-len is %d; want at least 1", o.maxLen)
	case fl.Changed("sym") && o.reverse == "":
		return fmt.Errorf("--sym needs --reverse: a model trained in the other direction")
	case fl.Changed("one-based") && o.gold == "":
		return fmt.Errorf("--one-based describes the --gold file; give one")
	}
	if err := align.Symmetrization(o.sym).Validate(); err != nil {
		return fmt.Errorf("--sym: %w", err)
	}
	if o.output == "-" {
		o.output = ""
	}
	inputs := []app.NamedPath{{Role: "--model", Path: o.model}, {Role: "--src", Path: o.src}, {Role: "--tgt", Path: o.tgt},
		{Role: "--gold", Path: o.gold}, {Role: "--reverse", Path: o.reverse}}
	if err := app.CheckOutputs([]app.NamedPath{{Role: "--output", Path: o.output}}, inputs); err != nil {
		return err
	}
	ck, err := model.Load(o.model)
	if err != nil {
		return err
	}
	req := app.AlignRequest{Model: ck.Model, Lowercase: ck.Config.Data.Lowercase, Src: o.src, Tgt: o.tgt,
		Threshold: o.threshold, Batch: o.batch, Output: cmd.OutOrStdout(), MaxLen: app.LengthLimit(ck.Config), Warn: cmd.ErrOrStderr()}
	if o.maxLen > 0 {
		req.MaxLen = o.maxLen
	}
	if o.reverse != "" {
		rev, err := model.Load(o.reverse)
		if err != nil {
			return err
		}
		req.Reverse, req.Sym = rev.Model, align.Symmetrization(o.sym)
	}
	if o.gold != "" {
		f, err := data.Open(o.gold)
		if err != nil {
			return err
		}
		req.GoldName, req.OneBasedGold = o.gold, o.oneBased
		req.Gold, err = align.ReadPharaoh(f, o.gold, o.oneBased)
		f.Close()
		if err != nil {
			return err
		}
	}
	report := cmd.ErrOrStderr()
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
		req.Output, report = f, cmd.OutOrStdout()
	}
	scores, err := app.Align(cmd.Context(), req)
	if err != nil {
		return err
	}
	if o.gold != "" {
		printScores(report, scores)
	}
	return nil
}

// printScores prints alignment scores on one line.
func printScores(w io.Writer, s align.Scores) {
	fmt.Fprintf(w, "precision %.4f  recall %.4f  AER %.4f  (%d predicted links, %d sure, %d hit sure, %d hit possible)\n",
		s.Precision(), s.Recall(), s.AER(), s.Predicted, s.Sure, s.HitSure, s.HitPossible)
}
