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

// Select routes every matrix product — the plain-Go passes through gonum's blas32/blas64, the training graph
// through gorgonia and its tensors — to OpenBLAS, and returns what Active then says. These are the libraries' own
// process-wide settings, so call it once, first thing in main (or in a TestMain), before any work is done. When
// OpenBLAS chose kernels older than the CPU (see BetterCoreType) it first starts the program again in place of
// this process with OPENBLAS_CORETYPE set, and does not return; if that restart fails it says so on stderr and
// goes on with the slower kernels.
func Select(stderr io.Writer) string {
	useBestKernels(stderr)
	impl := netlib.Implementation{}
	blas32.Use(impl)
	blas64.Use(impl)
	G.Use(impl)
	tensor.Use(impl)
	return Active()
}

// Active describes the BLAS that matrix products run on now: OpenBLAS and its kernels once Select has routed
// every library to it, gonum's pure-Go kernels before.
func Active() string {
	_, b32 := blas32.Implementation().(netlib.Implementation)
	_, b64 := blas64.Implementation().(netlib.Implementation)
	_, g := G.WhichBLAS().(netlib.Implementation)
	_, t := tensor.WhichBLAS().(netlib.Implementation)
	switch {
	case b32 && b64 && g && t:
		return fmt.Sprintf("OpenBLAS (cgo, gonum.org/v1/netlib), %s kernels", BLASCore())
	case b32 || b64 || g || t:
		return fmt.Sprintf("mixed: OpenBLAS for blas32 %v, blas64 %v, gorgonia %v, tensor %v; gonum (pure Go) for the rest", b32, b64, g, t)
	}
	return "gonum (pure Go; this build has OpenBLAS, but backend.Select was not called)"
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
// program has to start again with it set: Select does that. A user's own setting is never overridden.
func BetterCoreType() (string, bool) {
	if _, set := os.LookupEnv("OPENBLAS_CORETYPE"); set {
		return "", false
	}
	return betterCoreType(BLASCore(), cpuLevel())
}

// useBestKernels starts the program again in place of this process with OPENBLAS_CORETYPE set when
// BetterCoreType says OpenBLAS chose kernels older than the CPU, and returns at once otherwise. If the restart
// fails it says so on stderr and returns: the program then runs on the slower kernels.
func useBestKernels(stderr io.Writer) {
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
