//go:build mpi

package main

// testBuildTags are the build tags of the attend binary that TestMain builds: those of the test binary.
const testBuildTags = "mpi"
