package main

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/attend-nmt/attend/app"
	"github.com/attend-nmt/attend/data"
	"github.com/attend-nmt/attend/internal/plural"
	"github.com/spf13/cobra"
)

// bpeOptions is everything `attend bpe learn|apply|undo` reads from its command line.
type bpeOptions struct {
	inputs   []string
	output   string
	codes    string
	merges   int
	keepCase bool
}

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
	var o bpeOptions
	learn := &cobra.Command{
		Use:   "learn --merges N --input FILE [--input FILE] [--output CODES]",
		Short: "Learn merges from text files",
		Args:  cobra.NoArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return runBPELearn(cmd, o) },
	}
	learn.Flags().IntVar(&o.merges, "merges", 8000, "number of merges to learn")
	learn.Flags().StringArrayVarP(&o.inputs, "input", "i", nil, "text file to learn from (repeatable; required)")
	learn.Flags().StringVarP(&o.output, "output", "o", "", "merges file (default: standard output)")
	learn.Flags().BoolVar(&o.keepCase, "keep-case", false, "do not lowercase")
	_ = learn.MarkFlagRequired("input")
	apply := &cobra.Command{
		Use:   "apply --codes CODES [--input FILE] [--output FILE]",
		Short: "Split text into subwords",
		Args:  cobra.NoArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return runBPEApply(cmd, o, false) },
	}
	apply.Flags().StringVar(&o.codes, "codes", "", "merges file from bpe learn (required)")
	apply.Flags().BoolVar(&o.keepCase, "keep-case", false, "do not lowercase")
	_ = apply.MarkFlagRequired("codes")
	undo := &cobra.Command{
		Use:   "undo [--input FILE] [--output FILE]",
		Short: "Join subwords back into words",
		Args:  cobra.NoArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return runBPEApply(cmd, o, true) },
	}
	for _, c := range []*cobra.Command{apply, undo} {
		c.Flags().StringArrayVarP(&o.inputs, "input", "i", nil, "input file (default: standard input)")
		c.Flags().StringVarP(&o.output, "output", "o", "", "output file (default: standard output)")
	}
	cmd.AddCommand(learn, apply, undo)
	return cmd
}

func runBPELearn(cmd *cobra.Command, o bpeOptions) (err error) {
	if o.merges < 1 {
		return fmt.Errorf("--merges is %d; want at least 1", o.merges)
	}
	if err := checkBPEOutput(o, "codes.bpe"); err != nil {
		return err
	}
	b, err := app.LearnBPEFiles(cmd.Context(), o.inputs, data.NewRegexTokenizer(!o.keepCase), o.merges, progressOf(cmd))
	if err != nil {
		return err
	}
	return withOutput(cmd, o.output, func(w io.Writer) error {
		_, err := b.WriteTo(w)
		return err
	})
}

func runBPEApply(cmd *cobra.Command, o bpeOptions, undo bool) error {
	if len(o.inputs) > 1 {
		return errors.New("give at most one --input")
	}
	if err := checkBPEOutput(o, "output.txt"); err != nil {
		return err
	}
	req := app.SubwordRequest{Tokenizer: data.NewRegexTokenizer(!o.keepCase), Input: cmd.InOrStdin(), InputName: "stdin"}
	if !undo {
		f, err := data.Open(o.codes)
		if err != nil {
			return err
		}
		req.BPE, err = data.ReadBPE(f, o.codes)
		f.Close()
		if err != nil {
			return err
		}
	}
	if len(o.inputs) == 1 {
		f, err := data.Open(o.inputs[0])
		if err != nil {
			return err
		}
		defer f.Close()
		req.Input, req.InputName = f, o.inputs[0]
	}
	return withOutput(cmd, o.output, func(w io.Writer) error {
		req.Output = w
		n, err := app.ApplySubwords(cmd.Context(), req)
		if ctx := cmd.Context(); err != nil && ctx.Err() != nil && errors.Is(err, ctx.Err()) {
			return fmt.Errorf("interrupted after %s", plural.Count(n, "line"))
		}
		return err
	})
}

// checkBPEOutput checks --output against the input files (see app.CheckOutputs); example names a file that
// fits it.
func checkBPEOutput(o bpeOptions, example string) error {
	if o.output == "" {
		return nil
	}
	var inputs []app.NamedPath
	for _, in := range o.inputs {
		inputs = append(inputs, app.NamedPath{Role: "--input", Path: in})
	}
	if o.codes != "" {
		inputs = append(inputs, app.NamedPath{Role: "--codes", Path: o.codes})
	}
	return app.CheckOutputs([]app.NamedPath{{Role: "--output", Path: o.output, Example: example}}, inputs)
}

// withOutput runs write on the file at path (standard output when empty), reporting a failed close.
func withOutput(cmd *cobra.Command, path string, write func(io.Writer) error) (err error) {
	if path == "" {
		return write(cmd.OutOrStdout())
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := f.Close(); cerr != nil && err == nil {
			err = cerr
		}
	}()
	return write(f)
}
