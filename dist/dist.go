// Package dist lets several processes train one model together (data parallelism): each knows its rank among
// them, and gradients are summed over all of them, through MPI when attend is built with -tags mpi and started
// by mpirun, or trivially in a single process.
package dist

import (
	"fmt"
	"os"
	"strconv"
)

// Group is the set of processes that train together. All of them call the same methods in the same order;
// a call that only some make blocks the others forever.
type Group interface {
	// Rank is this process's number, from 0; rank 0 logs, validates and writes checkpoints.
	Rank() int
	// Size is the number of processes.
	Size() int
	// SumFloat32 replaces buf, in every process, with the element-wise sum of every process's buf.
	SumFloat32(buf []float32) error
	// SumFloat64 is SumFloat32 for float64 values (losses and counters).
	SumFloat64(buf []float64) error
	// Abort stops every process of the group with the given exit status: what a process does when it fails,
	// so that the others do not wait for it forever.
	Abort(status int)
	// Close ends the group (MPI_Finalize); the process must not use it afterwards.
	Close() error
}

// Single is the group of one process: sums are the values themselves.
type Single struct{}

// Rank is 0.
func (Single) Rank() int { return 0 }

// Size is 1.
func (Single) Size() int { return 1 }

// SumFloat32 leaves buf as it is.
func (Single) SumFloat32([]float32) error { return nil }

// SumFloat64 leaves buf as it is.
func (Single) SumFloat64([]float64) error { return nil }

// Abort exits the process.
func (Single) Abort(status int) { os.Exit(status) }

// Close does nothing.
func (Single) Close() error { return nil }

// Open returns the group this process belongs to: the MPI world when the binary has MPI and was started by
// mpirun, else Single. A binary without MPI started by mpirun with more than one process is an error, since each
// process would train alone and all of them would write the same checkpoint.
func Open() (Group, error) {
	size := launcherSize()
	if size <= 1 {
		return Single{}, nil
	}
	return openMPI(size)
}

// launcherSize is the number of processes mpirun started, read from Open MPI's environment (1 when not run
// by mpirun).
func launcherSize() int {
	for _, name := range []string{"OMPI_COMM_WORLD_SIZE", "PMI_SIZE"} {
		if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
			return n
		}
	}
	return 1
}

// errNoMPI is openMPI's answer in a binary built without MPI.
func errNoMPI(size int) error {
	return fmt.Errorf("dist: started by mpirun with %d processes, but this attend was built without MPI (build it with `make build-mpi`, which needs libopenmpi-dev)", size)
}
