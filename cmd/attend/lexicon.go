package main

import (
	"fmt"
	"time"

	"github.com/attend-nmt/attend/app"
	"github.com/attend-nmt/attend/internal/plural"
	"github.com/attend-nmt/attend/model"
	"github.com/attend-nmt/attend/model/checkpoint"
	"github.com/spf13/cobra"
)

func newLexiconCmd() *cobra.Command {
	var ckpt, out string
	var corpus app.Corpus
	cmd := &cobra.Command{
		Use:   "lexicon --model CKPT --src FILE --tgt FILE [--out CKPT]",
		Short: "Learn the lexicon of --shortlist for a model trained without one",
		Long: `Lexicon estimates, from a parallel corpus (normally the model's training corpus), which target words each
source word translates into (IBM Model 1), and stores the table in the checkpoint, which translate --shortlist
needs. attend train learns it by itself; this command is for models trained before it did. The weights, the
optimizer state and the training position are copied unchanged; the checkpoint is written atomically, in place
unless --out is given. A corpus given the wrong way round for the model (--src in its target language) is
refused: its words are known to the wrong vocabulary.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if out == "" {
				out = ckpt
			}
			// --out may be --model: the checkpoint is read whole, then replaced atomically.
			inputs := []app.NamedPath{{Role: "--src", Path: corpus.Src}, {Role: "--tgt", Path: corpus.Tgt}, {Role: "--tsv", Path: corpus.TSV},
				{Role: "--model", Path: ckpt, Replaceable: true}}
			if err := app.CheckOutputs(app.CheckpointOutputs("--out", out), inputs); err != nil {
				return err
			}
			ck, err := model.Load(ckpt)
			if err != nil {
				return err
			}
			began := time.Now()
			n, err := app.LearnLexicon(cmd.Context(), ck, corpus, progressOf(cmd))
			if err != nil {
				return err
			}
			if _, err := checkpoint.RemoveStale(out); err != nil {
				return err
			}
			if err := model.Save(out, ck.Config, ck.Model, ck.Adam, ck.Progress); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "lexicon of %s learned from a corpus of %s in %.1fs; written to %s\n",
				plural.Count(len(ck.Model.Lexicon.Best), "source word"), plural.Count(n, "sentence pair"), time.Since(began).Seconds(), out)
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVarP(&ckpt, "model", "m", "", "checkpoint to add the lexicon to (required)")
	fl.StringVar(&corpus.Src, "src", "", "source side of the corpus")
	fl.StringVar(&corpus.Tgt, "tgt", "", "target side of the corpus")
	fl.StringVar(&corpus.TSV, "tsv", "", "or: one file of \"source<TAB>target\" or \"source ||| target\" lines")
	fl.StringVarP(&out, "out", "o", "", "checkpoint to write (default: --model, replaced atomically)")
	_ = cmd.MarkFlagRequired("model")
	return cmd
}
