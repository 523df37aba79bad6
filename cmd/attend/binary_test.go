package main

// The helpers of the tests that run attend: run runs a command line in this process, as the binary would; TestMain
// builds the binary once, with this test binary's build tags (testBuildTags), for the tests that need a process of
// their own: runFor and runLimited run it to the end within a time or memory bound and capture what it wrote,
// startAttend starts it for a test that talks to it while it runs (or signals it); waitExit and exitCode read how
// it ended; writeFile and readBytes set up and read files.

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/attend-nmt/attend/backend"
)

// attendBin is the attend binary built once for these tests.
var attendBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "attend-cli")
	if err != nil {
		panic(err)
	}
	backend.Select(io.Discard) // as the binary's main does, for the commands that run in this process (run)
	tags, err := testBuildTags()
	if err != nil {
		panic(err)
	}
	attendBin = filepath.Join(dir, "attend")
	if out, err := exec.Command("go", "build", "-tags", tags, "-o", attendBin, ".").CombinedOutput(); err != nil {
		os.Stderr.Write(out)
		panic(err)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// testBuildTags are the build tags of this test binary (go test -tags …), which TestMain builds the attend binary
// with. Tests compare what that binary does with what runs in this process — TestKillDashNineNeverLosesTheRun
// kills the binary's runs, resumes them here and requires the weights of a run of this process bit for bit — so
// both must be one build: above all one BLAS, since gonum's kernels and OpenBLAS's round differently.
func testBuildTags() (string, error) {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "", errors.New("the test binary has no build information to read its build tags from")
	}
	for _, s := range info.Settings {
		if s.Key == "-tags" {
			return s.Value, nil
		}
	}
	return "", nil // built without -tags
}

// attendRun is one run of the attend binary to its end.
type attendRun struct {
	args  []string
	stdin string
	limit time.Duration // the process is killed after this long (0: never)
	vmem  bool          // within 4 GB of address space (ulimit -v), so that a command that would exhaust the machine's memory fails instead
}

// do runs the binary and returns its stdout, its stderr, its exit code (-1, and hung, when it was killed after
// r.limit) and how long it took.
func (r attendRun) do(t *testing.T) (stdout, stderr string, code int, hung bool, took time.Duration) {
	t.Helper()
	ctx := context.Background()
	if r.limit > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, r.limit)
		defer cancel()
	}
	name, args := attendBin, r.args
	if r.vmem {
		name, args = "sh", append([]string{"-c", `ulimit -v 4194304 && exec "$0" "$@"`, attendBin}, r.args...)
	}
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Stdin = strings.NewReader(r.stdin)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	start := time.Now()
	err := cmd.Run()
	took = time.Since(start)
	if ctx.Err() != nil {
		return o.String(), e.String(), -1, true, took
	}
	return o.String(), e.String(), exitCode(t, err), false, took
}

// run runs one attend command line in this process, as the binary's main does (attendMain), and returns what it
// wrote to stdout and stderr and its exit code. Tests that need a process of their own — to signal it, kill it,
// bound its memory or time, or run it under mpirun — use startAttend, runFor, runLimited or attendRun.
func run(t *testing.T, stdin string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var o, e bytes.Buffer
	code = attendMain(args, strings.NewReader(stdin), &o, &e)
	return o.String(), e.String(), code
}

// runFor runs the attend binary like run, but kills it after limit; hung reports that it had to.
func runFor(t *testing.T, limit time.Duration, stdin string, args ...string) (stdout, stderr string, code int, hung bool) {
	t.Helper()
	stdout, stderr, code, hung, _ = attendRun{args: args, stdin: stdin, limit: limit}.do(t)
	return stdout, stderr, code, hung
}

// runLimited runs the attend binary as run does, within 4 GB of address space (ulimit -v) and the given time,
// so that a command that would exhaust the machine's memory fails instead. It returns the exit code (-1 when
// the time ran out) and how long the command took.
func runLimited(t *testing.T, limit time.Duration, args ...string) (stdout, stderr string, code int, took time.Duration) {
	t.Helper()
	stdout, stderr, code, _, took = attendRun{args: args, limit: limit, vmem: true}.do(t)
	return stdout, stderr, code, took
}

// lockedBuffer collects what another goroutine writes (a process's stderr, a ticker's lines) while the test reads it.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// startAttend starts the attend binary with args and returns it, a pipe from its stdout and its stderr as it
// comes. The caller reads the pipe to its end (or the process may block on it) and waits for the process.
func startAttend(t *testing.T, args ...string) (cmd *exec.Cmd, stdout io.ReadCloser, stderr *lockedBuffer) {
	t.Helper()
	cmd = exec.Command(attendBin, args...)
	stderr = &lockedBuffer{}
	cmd.Stderr = stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd, stdout, stderr
}

// exitCode is the exit status of a process whose Run or Wait returned err: 0 for nil, the status of an
// *exec.ExitError (-1 for a process killed by a signal). Any other error (it did not start, a pipe failed) fails
// the test.
func exitCode(t *testing.T, err error) int {
	t.Helper()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		return exit.ExitCode()
	case err != nil:
		t.Fatal(err)
	}
	return 0
}

// waitExit waits up to limit for cmd to end and returns its exit status (-1 if it had to be killed).
func waitExit(t *testing.T, cmd *exec.Cmd, limit time.Duration) int {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return exitCode(t, err)
	case <-time.After(limit):
		cmd.Process.Kill()
		<-done
		return -1
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func readBytes(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
