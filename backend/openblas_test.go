//go:build openblas

package backend

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"gonum.org/v1/gonum/blas/blas32"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/netlib/blas/netlib"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// TestMain doubles as the child of the tests of Select: with ATTEND_BACKEND_CHILD=1 it calls Select, as attend's
// main does, and prints what Select returned, which libraries run on OpenBLAS and the OpenBLAS core it ends up
// with. The tests themselves run without Select.
func TestMain(m *testing.M) {
	if os.Getenv("ATTEND_BACKEND_CHILD") == "1" {
		selected := Select(os.Stderr)
		fmt.Printf("selected %s\nrouted %s\ncore %s\n", selected, routed(), BLASCore())
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// routed says which of the four libraries run on OpenBLAS.
func routed() string {
	_, b32 := blas32.Implementation().(netlib.Implementation)
	_, b64 := blas64.Implementation().(netlib.Implementation)
	_, g := G.WhichBLAS().(netlib.Implementation)
	_, t := tensor.WhichBLAS().(netlib.Implementation)
	return fmt.Sprintf("blas32 %v, blas64 %v, gorgonia %v, tensor %v", b32, b64, g, t)
}

// runChild runs this test binary as the child of TestMain, with OPENBLAS_CORETYPE set to coreType ("" for
// unset), and returns what it printed, by the first word of each line.
func runChild(t *testing.T, coreType string) map[string]string {
	t.Helper()
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "OPENBLAS_CORETYPE=") {
			env = append(env, kv)
		}
	}
	env = append(env, "ATTEND_BACKEND_CHILD=1")
	if coreType != "" {
		env = append(env, "OPENBLAS_CORETYPE="+coreType)
	}
	cmd := exec.Command(os.Args[0])
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	printed := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		key, value, _ := strings.Cut(line, " ")
		printed[key] = value
	}
	return printed
}

// TestImportingChangesNothing checks that the package has no side effect of its own: until Select is called,
// every library keeps gonum's pure-Go BLAS, and Active says so.
func TestImportingChangesNothing(t *testing.T) {
	if got, want := routed(), "blas32 false, blas64 false, gorgonia false, tensor false"; got != want {
		t.Errorf("before Select: %s; want %s", got, want)
	}
	if got := Active(); !strings.HasPrefix(got, "gonum ") {
		t.Errorf("Active() before Select = %q", got)
	}
}

// TestSelectRoutesEveryLibrary checks, in a child (Select may start its process again), that Select routes
// gonum's blas32 and blas64, gorgonia and its tensors to OpenBLAS, and says so, naming the kernels.
func TestSelectRoutesEveryLibrary(t *testing.T) {
	printed := runChild(t, "")
	if got, want := printed["routed"], "blas32 true, blas64 true, gorgonia true, tensor true"; got != want {
		t.Errorf("after Select: %s; want %s", got, want)
	}
	if got, want := printed["selected"], "OpenBLAS (cgo, gonum.org/v1/netlib), "+printed["core"]+" kernels"; printed["core"] == "" || got != want {
		t.Errorf("Select returned %q, want %q", got, want)
	}
}

// TestSelectRunsTheBestKernels starts a child without OPENBLAS_CORETYPE and checks that it runs kernels of the
// CPU's SIMD level (OpenBLAS releases older than the CPU fall back to Prescott's), and that a user's setting is
// kept.
func TestSelectRunsTheBestKernels(t *testing.T) {
	for _, c := range []struct {
		env  string // OPENBLAS_CORETYPE, or "" for unset
		want string // the core the child must report, or "" for one at the CPU's level
	}{{"", ""}, {"Prescott", "Prescott"}} {
		core, ok := runChild(t, c.env)["core"]
		if !ok {
			t.Fatalf("OPENBLAS_CORETYPE=%s: the child printed no core", c.env)
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
