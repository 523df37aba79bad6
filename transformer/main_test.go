package transformer

import (
	"os"
	"testing"

	"github.com/attend-nmt/attend/backend"
)

// TestMain runs the tests and benchmarks on the fastest BLAS of the build (OpenBLAS with -tags openblas), as
// attend itself does.
func TestMain(m *testing.M) {
	backend.Select(os.Stderr)
	os.Exit(m.Run())
}
