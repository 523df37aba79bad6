package main

import (
	"fmt"

	"github.com/attend-nmt/attend/app"
	"github.com/attend-nmt/attend/model"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// decodeFlags are the search settings `translate` and `eval` share.
type decodeFlags struct {
	maxLen, batch int // 0: the checkpoint's decode.max_len and decode.batch
}

func (d *decodeFlags) register(fl *pflag.FlagSet) {
	fl.IntVar(&d.maxLen, "max-len", 0, "longest translation in tokens (default: the checkpoint's decode.max_len)")
	fl.IntVar(&d.batch, "batch", 0, "sentences per batch (default: the checkpoint's decode.batch)")
}

// options checks the flags and fills in the checkpoint's defaults.
func (d *decodeFlags) options(cmd *cobra.Command, cfg model.Config) (app.DecodeOptions, error) {
	fl := cmd.Flags()
	if fl.Changed("max-len") && d.maxLen < 1 {
		return app.DecodeOptions{}, fmt.Errorf("--max-len is %d; want at least 1", d.maxLen)
	}
	if fl.Changed("batch") && d.batch < 1 {
		return app.DecodeOptions{}, fmt.Errorf("--batch is %d; want at least 1", d.batch)
	}
	o := app.DecodeOptions{MaxLen: cfg.Decode.MaxLen, Batch: cfg.Decode.Batch}
	if d.maxLen > 0 {
		o.MaxLen = d.maxLen
	}
	if d.batch > 0 {
		o.Batch = d.batch
	}
	return o, nil
}
