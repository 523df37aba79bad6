// Package backend chooses the BLAS that every matrix product in attend runs on — gonum's pure-Go kernels, or
// OpenBLAS through cgo in a build with `-tags openblas` — and says which one is active. Importing it changes
// nothing: a program calls Select once, first thing in main, and tests or benchmarks that want the build's
// fastest BLAS call it in their TestMain. Until then every product runs on gonum's pure-Go kernels.
package backend
