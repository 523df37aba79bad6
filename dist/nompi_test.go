//go:build !mpi

package dist

import (
	"strings"
	"testing"
)

// TestOpenUnderMPIRunWithoutMPIFails checks that a binary built without MPI refuses to start as one of several
// processes (each would train alone and all would write the same checkpoint), and says how to build one that can.
func TestOpenUnderMPIRunWithoutMPIFails(t *testing.T) {
	for _, env := range []string{"OMPI_COMM_WORLD_SIZE", "PMI_SIZE"} {
		t.Setenv("OMPI_COMM_WORLD_SIZE", "")
		t.Setenv("PMI_SIZE", "")
		t.Setenv(env, "2")
		_, err := Open()
		if err == nil || !strings.Contains(err.Error(), "2 processes") || !strings.Contains(err.Error(), "make build-mpi") {
			t.Fatalf("%s=2: err = %v, want one naming 2 processes and make build-mpi", env, err)
		}
	}
}
