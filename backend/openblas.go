//go:build openblas

package backend

/*
#cgo LDFLAGS: -lopenblas
void openblas_set_num_threads(int);
int openblas_get_num_threads(void);
char* openblas_get_corename(void);
*/
import "C"

import (
	"fmt"
	"io"
	"os"
	"syscall"

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

// BLASCore is the name of the CPU kernels OpenBLAS chose when the process started, e.g. "SkylakeX" or "Haswell".
func BLASCore() string { return C.GoString(C.openblas_get_corename()) }

// BetterCoreType returns the OpenBLAS core type this CPU should run, and true, when OpenBLAS fell back to older
// kernels than the CPU supports while OPENBLAS_CORETYPE is unset. OpenBLAS releases older than the CPU do not
// recognise it and fall back to "Prescott" (SSE3): on an AVX-512 Xeon that is about 4.5× slower on matrix
// products (22 against 103 GFLOP/s measured here). OpenBLAS reads the variable once, when it is loaded, so the
// program has to start again with it set: UseBestKernels does that. A user's own setting is never overridden.
func BetterCoreType() (string, bool) {
	if _, set := os.LookupEnv("OPENBLAS_CORETYPE"); set {
		return "", false
	}
	return betterCoreType(BLASCore(), cpuLevel())
}

// UseBestKernels starts the program again in place of this process with OPENBLAS_CORETYPE set when
// BetterCoreType says OpenBLAS chose kernels older than the CPU, and returns at once otherwise. Call it first thing
// in main, before any work is done. If the restart fails it says so on stderr and returns: the program then runs
// on the slower kernels.
func UseBestKernels(stderr io.Writer) {
	core, ok := BetterCoreType()
	if !ok {
		return
	}
	exe, err := os.Executable()
	if err == nil {
		err = syscall.Exec(exe, os.Args, append(os.Environ(), "OPENBLAS_CORETYPE="+core))
	}
	fmt.Fprintf(stderr, "OpenBLAS chose its %s kernels on this CPU and restarting with OPENBLAS_CORETYPE=%s failed (%v); "+
		"set it yourself for faster matrix products\n", BLASCore(), core, err)
}
