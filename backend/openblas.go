//go:build openblas

package backend

/*
#cgo LDFLAGS: -lopenblas
void openblas_set_num_threads(int);
int openblas_get_num_threads(void);
*/
import "C"

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

// SetBLASThreads sets how many threads OpenBLAS runs each product on. Callers that already spread
// independent work over every core (batched decoding) set 1, so that the two kinds of parallelism do not fight.
func SetBLASThreads(n int) { C.openblas_set_num_threads(C.int(n)) }

// BLASThreads is the number of threads OpenBLAS runs each product on.
func BLASThreads() int { return int(C.openblas_get_num_threads()) }
