package dist

import "testing"

// TestOpenOutsideMPIRunIsSingle checks that a process not started by mpirun, or started as a job of one, trains
// alone.
func TestOpenOutsideMPIRunIsSingle(t *testing.T) {
	for _, size := range []string{"", "1", "junk"} {
		t.Setenv("OMPI_COMM_WORLD_SIZE", size)
		t.Setenv("PMI_SIZE", "")
		g, err := Open()
		if err != nil {
			t.Fatalf("OMPI_COMM_WORLD_SIZE=%q: %v", size, err)
		}
		if _, ok := g.(Single); !ok || g.Rank() != 0 || g.Size() != 1 {
			t.Fatalf("OMPI_COMM_WORLD_SIZE=%q: got %T rank %d of %d, want Single", size, g, g.Rank(), g.Size())
		}
	}
}

// TestSingleSumsAreIdentity checks that the one-process group leaves buffers as they are.
func TestSingleSumsAreIdentity(t *testing.T) {
	f32 := []float32{1.5, -2}
	f64 := []float64{3.25}
	var g Single
	if err := g.SumFloat32(f32); err != nil || f32[0] != 1.5 || f32[1] != -2 {
		t.Fatalf("SumFloat32 changed the buffer: %v, %v", f32, err)
	}
	if err := g.SumFloat64(f64); err != nil || f64[0] != 3.25 {
		t.Fatalf("SumFloat64 changed the buffer: %v, %v", f64, err)
	}
}
