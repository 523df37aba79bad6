//go:build openblas

package main

import (
	"gonum.org/v1/gonum/blas/blas32"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/netlib/blas/netlib"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// blasName names the BLAS this binary multiplies matrices with.
const blasName = "OpenBLAS (cgo, gonum.org/v1/netlib)"

// init routes every matrix product — the plain-Go forward passes through gonum's blas32/blas64, and the
// training graph through gorgonia and its tensors — to OpenBLAS.
func init() {
	impl := netlib.Implementation{}
	blas32.Use(impl)
	blas64.Use(impl)
	G.Use(impl)
	tensor.Use(impl)
}
