//go:build openblas

package backend

import (
	"gonum.org/v1/gonum/blas/blas32"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/netlib/blas/netlib"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// BLAS names the BLAS in use.
const BLAS = "OpenBLAS (cgo, gonum.org/v1/netlib)"

// init routes every matrix product — the plain-Go passes through gonum's blas32/blas64, the training graph
// through gorgonia and its tensors — to OpenBLAS. These are the libraries' own process-wide settings.
func init() {
	impl := netlib.Implementation{}
	blas32.Use(impl)
	blas64.Use(impl)
	G.Use(impl)
	tensor.Use(impl)
}
