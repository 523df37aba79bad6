package main

import (
	"context"

	"github.com/attend-nmt/attend/app"
	"github.com/spf13/cobra"
)

func newBPECmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "bpe learn|apply|undo",
		Short: "Learn and apply byte-pair-encoding subwords",
		Long: `bpe learns byte-pair-encoding merges (Sennrich et al. 2016) from text, splits text into the subwords they
define, and joins subwords back into words. Text is tokenized as training does (lowercased, \w+|[^\w\s]);
subwords that do not end a word carry "@@", as subword-nmt writes them, and the merges file is subword-nmt's.

  attend bpe learn --merges 8000 --input train.de --input train.en --output codes.bpe
  attend bpe apply --codes codes.bpe < test.de > test.bpe.de
  attend bpe undo < hyp.bpe.en > hyp.en

attend train can learn and apply the merges itself: --set data.subword=bpe --set data.merges=8000 learns one
list of merges for both languages (as "bpe learn" with both training files does), stores it in the checkpoint,
and translate, eval, align and heatmap then read and write words. Text split here (or by subword-nmt) can also
be trained on as it is, with data.subword none: the tokenizer then keeps the "@@" markers, and the model
writes subwords, which "bpe undo" joins.`,
	}
	var o app.BPEOptions
	run := func(f func(context.Context, app.BPEOptions) error) func(*cobra.Command, []string) error {
		return func(cmd *cobra.Command, _ []string) error {
			o.Streams = streamsOf(cmd)
			return f(cmd.Context(), o)
		}
	}
	learn := &cobra.Command{
		Use:   "learn --merges N --input FILE [--input FILE] [--output CODES]",
		Short: "Learn merges from text files",
		Args:  cobra.NoArgs,
		RunE:  run(app.RunBPELearn),
	}
	learn.Flags().IntVar(&o.Merges, "merges", 8000, "number of merges to learn")
	learn.Flags().StringArrayVarP(&o.Inputs, "input", "i", nil, "text file to learn from (repeatable; required)")
	learn.Flags().StringVarP(&o.Output, "output", "o", "", "merges file (default: standard output)")
	learn.Flags().BoolVar(&o.KeepCase, "keep-case", false, "do not lowercase")
	_ = learn.MarkFlagRequired("input")
	apply := &cobra.Command{
		Use:   "apply --codes CODES [--input FILE] [--output FILE]",
		Short: "Split text into subwords",
		Args:  cobra.NoArgs,
		RunE:  run(app.RunBPEApply),
	}
	apply.Flags().StringVar(&o.Codes, "codes", "", "merges file from bpe learn (required)")
	apply.Flags().BoolVar(&o.KeepCase, "keep-case", false, "do not lowercase")
	_ = apply.MarkFlagRequired("codes")
	undo := &cobra.Command{
		Use:   "undo [--input FILE] [--output FILE]",
		Short: "Join subwords back into words",
		Args:  cobra.NoArgs,
		RunE:  run(app.RunBPEUndo),
	}
	for _, c := range []*cobra.Command{apply, undo} {
		c.Flags().StringArrayVarP(&o.Inputs, "input", "i", nil, "input file (default: standard input)")
		c.Flags().StringVarP(&o.Output, "output", "o", "", "output file (default: standard output)")
	}
	cmd.AddCommand(learn, apply, undo)
	return cmd
}
