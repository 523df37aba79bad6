//go:build openblas

package backend

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestMain doubles as the child of TestUseBestKernels: with ATTEND_BACKEND_CHILD=1 it calls UseBestKernels, as
// attend's main does, and prints the OpenBLAS core it ends up with.
func TestMain(m *testing.M) {
	if os.Getenv("ATTEND_BACKEND_CHILD") == "1" {
		UseBestKernels(os.Stderr)
		fmt.Printf("core %s\n", BLASCore())
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestUseBestKernels starts a child without OPENBLAS_CORETYPE and checks that it runs kernels of the CPU's
// SIMD level (OpenBLAS releases older than the CPU fall back to Prescott's), and that a user's setting is kept.
func TestUseBestKernels(t *testing.T) {
	for _, c := range []struct {
		env  string // OPENBLAS_CORETYPE, or "" for unset
		want string // the core the child must report, or "" for one at the CPU's level
	}{{"", ""}, {"Prescott", "Prescott"}} {
		var env []string
		for _, kv := range os.Environ() {
			if !strings.HasPrefix(kv, "OPENBLAS_CORETYPE=") {
				env = append(env, kv)
			}
		}
		env = append(env, "ATTEND_BACKEND_CHILD=1")
		if c.env != "" {
			env = append(env, "OPENBLAS_CORETYPE="+c.env)
		}
		cmd := exec.Command(os.Args[0])
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("child: %v\n%s", err, out)
		}
		core, ok := strings.CutPrefix(strings.TrimSpace(string(out)), "core ")
		if !ok {
			t.Fatalf("child printed %q", out)
		}
		switch {
		case c.want != "" && core != c.want:
			t.Errorf("OPENBLAS_CORETYPE=%s: the child runs %s", c.env, core)
		case c.want == "":
			if better, ok := betterCoreType(core, cpuLevel()); ok {
				t.Errorf("OPENBLAS_CORETYPE unset: the child runs %s kernels, below this CPU's %s", core, better)
			}
		}
	}
}
