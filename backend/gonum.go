//go:build !openblas

package backend

import "io"

// Select leaves every matrix product on gonum's pure-Go kernels, the only BLAS of this build, and returns what
// Active says. Build with `-tags openblas` (the Makefile does when libopenblas is installed) for OpenBLAS.
func Select(stderr io.Writer) string { return Active() }

// Active describes the BLAS that matrix products run on: gonum's pure-Go kernels.
func Active() string { return "gonum (pure Go; build with -tags openblas for OpenBLAS)" }

// SetBLASThreads does nothing: gonum's kernels size their own goroutines.
func SetBLASThreads(n int) {}

// BLASThreads is 0: gonum's kernels have no fixed thread count.
func BLASThreads() int { return 0 }

// BLASCore is empty: gonum's kernels choose nothing at start.
func BLASCore() string { return "" }
