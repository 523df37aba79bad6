// Package backend chooses the BLAS that every matrix product in attend runs on — gonum's pure-Go kernels, or
// OpenBLAS through cgo in a build with `-tags openblas` — and says which one is active. Importing it is enough:
// the choice is made when the program starts.
package backend

import "runtime"

// Describe is a one-line account of the numerical back end, for `attend version` and benchmark reports.
func Describe() string {
	return BLAS + ", " + runtime.GOARCH
}
