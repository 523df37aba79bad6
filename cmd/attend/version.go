package main

import (
	"cmp"
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/attend-nmt/attend/backend"
	"github.com/attend-nmt/attend/internal/plural"
	"github.com/attend-nmt/attend/kernels"
	"github.com/spf13/cobra"
)

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print attend's version, Go version and the numerical back end",
		Args:  cobra.NoArgs,
		Run: func(cmd *cobra.Command, _ []string) {
			version := "(devel)"
			if info, ok := debug.ReadBuildInfo(); ok && info.Main.Version != "" {
				version = info.Main.Version
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "attend %s, %s %s/%s, %s\nBLAS: %s\n", version, runtime.Version(),
				runtime.GOOS, runtime.GOARCH, plural.Count(runtime.NumCPU(), "CPU"), backend.Active())
			if core := backend.BLASCore(); core != "" {
				fmt.Fprintf(out, "BLAS core: %s\n", core)
			}
			fmt.Fprintf(out, "elementwise kernels: %s\n", kernels.Vector())
			// bfloat16 products on AMX: greedy and beam search use them by default, and training in bfloat16x3
			// (train.bf16x3; train.bf16 rounds once). Without AMX, train.bf16 runs on AVX512-BF16 where it is.
			if err := kernels.AMXStatus(); err != nil {
				fmt.Fprintf(out, "AMX: not used (%v)\n", err)
			} else {
				fmt.Fprintln(out, "AMX: bfloat16 products on the tile registers (by default decoding, and training in bfloat16x3)")
			}
			if on := kernels.BF16ProductsOn(); on != "AMX" {
				fmt.Fprintf(out, "bfloat16 products in training (train.bf16): %s\n", cmp.Or(on, "none (no AMX or AVX512-BF16)"))
			}
		},
	}
}
