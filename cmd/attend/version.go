package main

import (
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
			fmt.Fprintln(out, kernels.Here())
		},
	}
}
