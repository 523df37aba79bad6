package main

import (
	"fmt"
	"os"
	"time"

	"github.com/attend-nmt/attend/app"
	"github.com/attend-nmt/attend/data"
	"github.com/attend-nmt/attend/model"
	"github.com/spf13/cobra"
)

func newTranslateCmd() *cobra.Command {
	var modelPath, input, output, attention string
	var maxLen, batch int
	cmd := &cobra.Command{
		Use:   "translate --model CKPT [--input FILE] [--output FILE]",
		Short: "Translate sentences with a trained model (greedy search)",
		Long: `Translate reads one sentence per line (standard input, or --input; .gz is read directly), and writes
one translation per line (standard output, or --output). --attention FILE writes, per sentence, a JSON object
with the source tokens, the output tokens and the attention matrix (one row per output token and </s>).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ck, err := model.Load(modelPath)
			if err != nil {
				return err
			}
			req := app.TranslateRequest{Model: ck.Model, Lowercase: ck.Config.Data.Lowercase,
				Input: cmd.InOrStdin(), InputName: "stdin", Output: cmd.OutOrStdout(),
				MaxLen: ck.Config.Decode.MaxLen, Batch: ck.Config.Decode.Batch}
			if cmd.Flags().Changed("max-len") {
				req.MaxLen = maxLen
			}
			if cmd.Flags().Changed("batch") {
				req.Batch = batch
			}
			if input != "" && input != "-" {
				in, err := data.Open(input)
				if err != nil {
					return err
				}
				defer in.Close()
				req.Input, req.InputName = in, input
			}
			var closers []func() error
			if output != "" && output != "-" {
				f, err := os.Create(output)
				if err != nil {
					return fmt.Errorf("output: %w", err)
				}
				closers = append(closers, f.Close)
				req.Output = f
			}
			if attention != "" {
				f, err := os.Create(attention)
				if err != nil {
					return fmt.Errorf("attention: %w", err)
				}
				closers = append(closers, f.Close)
				req.Attention = f
			}
			start := time.Now()
			n, err := app.Translate(req)
			if err == nil {
				secs := time.Since(start).Seconds()
				fmt.Fprintf(cmd.ErrOrStderr(), "translated %d sentences in %.2fs (%.0f sentences/s)\n", n, secs, float64(n)/secs)
			}
			for _, c := range closers {
				if cerr := c(); err == nil && cerr != nil {
					err = cerr
				}
			}
			return err
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&modelPath, "model", "", "checkpoint to translate with (required)")
	fl.StringVar(&input, "input", "", "input file (default: standard input)")
	fl.StringVar(&output, "output", "", "output file (default: standard output)")
	fl.StringVar(&attention, "attention", "", "write attention matrices as JSON lines to this file")
	fl.IntVar(&maxLen, "max-len", 80, "longest translation in tokens (decode.max_len)")
	fl.IntVar(&batch, "batch", 64, "sentences per batch (decode.batch)")
	_ = cmd.MarkFlagRequired("model")
	return cmd
}
