package main

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/attend-nmt/attend/backend"
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
			fmt.Fprintf(cmd.OutOrStdout(), "attend %s, %s %s/%s, %d CPUs\nBLAS: %s\nelementwise kernels: %s\n", version, runtime.Version(),
				runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), backend.BLAS, kernels.Vector())
		},
	}
}
