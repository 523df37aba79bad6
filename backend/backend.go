// Package backend chooses the BLAS that every matrix product in attend runs on — gonum's pure-Go kernels, or
// OpenBLAS through cgo in a build with `-tags openblas` — and says which one is active. Importing it is enough:
// the choice is made when the program starts.
package backend
