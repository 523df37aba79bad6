//go:build !openblas

package backend

import "io"

// BLAS names the BLAS in use: gonum's pure-Go kernels. Build with `-tags openblas` (the Makefile does when
// libopenblas is installed) for OpenBLAS.
const BLAS = "gonum (pure Go; build with -tags openblas for OpenBLAS)"

// SetBLASThreads does nothing: gonum's kernels size their own goroutines.
func SetBLASThreads(n int) {}

// BLASThreads is 0: gonum's kernels have no fixed thread count.
func BLASThreads() int { return 0 }

// BLASCore is empty: gonum's kernels choose nothing at start.
func BLASCore() string { return "" }

// UseBestKernels does nothing: gonum's kernels need no restart.
func UseBestKernels(stderr io.Writer) {}

// BetterCoreType is always false: only OpenBLAS chooses kernels by core type.
func BetterCoreType() (string, bool) { return "", false }
