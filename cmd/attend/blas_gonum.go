//go:build !openblas

package main

// blasName names the BLAS this binary multiplies matrices with: gonum's pure-Go kernels. Build with
// `-tags openblas` (the Makefile does when libopenblas is installed) for OpenBLAS.
const blasName = "gonum (pure Go); build with -tags openblas for OpenBLAS"
