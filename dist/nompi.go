//go:build !mpi

package dist

// Available reports whether this binary can train across processes with MPI.
const Available = false

func openMPI(size int) (Group, error) { return nil, errNoMPI(size) }
