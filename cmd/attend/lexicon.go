package main

import (
	"github.com/attend-nmt/attend/app"
	"github.com/spf13/cobra"
)

func newLexiconCmd() *cobra.Command {
	var o app.LexiconOptions
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
			o.Streams = streamsOf(cmd)
			return app.RunLexicon(cmd.Context(), o)
		},
	}
	fl := cmd.Flags()
	fl.StringVarP(&o.Model, "model", "m", "", "checkpoint to add the lexicon to (required)")
	fl.StringVar(&o.Corpus.Src, "src", "", "source side of the corpus")
	fl.StringVar(&o.Corpus.Tgt, "tgt", "", "target side of the corpus")
	fl.StringVar(&o.Corpus.TSV, "tsv", "", "or: one file of \"source<TAB>target\" or \"source ||| target\" lines")
	fl.StringVarP(&o.Out, "out", "o", "", "checkpoint to write (default: --model, replaced atomically)")
	_ = cmd.MarkFlagRequired("model")
	return cmd
}
