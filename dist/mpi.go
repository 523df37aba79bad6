//go:build mpi

package dist

/*
#cgo pkg-config: ompi-c
#include <mpi.h>

// The MPI calls attend needs, as functions: MPI_COMM_WORLD and the datatypes are macros cgo cannot name.
static int attend_init(int *provided) { return MPI_Init_thread(NULL, NULL, MPI_THREAD_SERIALIZED, provided); }
static int attend_rank(int *rank) { return MPI_Comm_rank(MPI_COMM_WORLD, rank); }
static int attend_size(int *size) { return MPI_Comm_size(MPI_COMM_WORLD, size); }
static int attend_sum_f32(float *buf, int n) {
	return MPI_Allreduce(MPI_IN_PLACE, buf, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
}
static int attend_sum_f64(double *buf, int n) {
	return MPI_Allreduce(MPI_IN_PLACE, buf, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
}
static void attend_abort(int status) { MPI_Abort(MPI_COMM_WORLD, status); }
static int attend_finalize(void) { return MPI_Finalize(); }
static int attend_thread_serialized(void) { return MPI_THREAD_SERIALIZED; }
*/
import "C"

import (
	"fmt"
	"runtime"
	"unsafe"
)

// init keeps the main goroutine on the main OS thread, so the thread that initialises MPI (Open, called from
// main) is the one that finalises it (Close), as the MPI standard asks.
func init() { runtime.LockOSThread() }

// Available reports whether this binary can train across processes with MPI.
const Available = true

// maxCount bounds one MPI call's element count (an int in C); longer buffers go in pieces.
const maxCount = 1 << 30

// mpiGroup is the MPI world. MPI is initialised with MPI_THREAD_SERIALIZED: calls may come from any OS thread
// (goroutines move between them) but never two at once, which holds because the training loop makes them all.
type mpiGroup struct{ rank, size int }

func openMPI(int) (Group, error) {
	var provided C.int
	if rc := C.attend_init(&provided); rc != 0 {
		return nil, fmt.Errorf("dist: MPI_Init_thread failed (error %d)", int(rc))
	}
	if provided < C.attend_thread_serialized() {
		return nil, fmt.Errorf("dist: this MPI offers thread level %d, attend needs MPI_THREAD_SERIALIZED", int(provided))
	}
	var rank, size C.int
	if rc := C.attend_rank(&rank); rc != 0 {
		return nil, fmt.Errorf("dist: MPI_Comm_rank failed (error %d)", int(rc))
	}
	if rc := C.attend_size(&size); rc != 0 {
		return nil, fmt.Errorf("dist: MPI_Comm_size failed (error %d)", int(rc))
	}
	return &mpiGroup{rank: int(rank), size: int(size)}, nil
}

func (g *mpiGroup) Rank() int { return g.rank }
func (g *mpiGroup) Size() int { return g.size }

func (g *mpiGroup) SumFloat32(buf []float32) error {
	for len(buf) > 0 {
		n := min(len(buf), maxCount)
		if rc := C.attend_sum_f32((*C.float)(unsafe.Pointer(&buf[0])), C.int(n)); rc != 0 {
			return fmt.Errorf("dist: MPI_Allreduce of %d floats failed (error %d)", n, int(rc))
		}
		buf = buf[n:]
	}
	return nil
}

func (g *mpiGroup) SumFloat64(buf []float64) error {
	for len(buf) > 0 {
		n := min(len(buf), maxCount)
		if rc := C.attend_sum_f64((*C.double)(unsafe.Pointer(&buf[0])), C.int(n)); rc != 0 {
			return fmt.Errorf("dist: MPI_Allreduce of %d doubles failed (error %d)", n, int(rc))
		}
		buf = buf[n:]
	}
	return nil
}

func (g *mpiGroup) Abort(status int) { C.attend_abort(C.int(status)) }

func (g *mpiGroup) Close() error {
	if rc := C.attend_finalize(); rc != 0 {
		return fmt.Errorf("dist: MPI_Finalize failed (error %d)", int(rc))
	}
	return nil
}
