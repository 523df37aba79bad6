package checkpoint

import (
	"bufio"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestLockHelperProcess is not a test: TestLockIsRefusedWhileHeldAndTakenOverWhenStale runs the test binary
// as a second process that takes the lock named by ATTEND_LOCK_HELPER, says "locked", and holds it until its
// standard input closes or it is killed.
func TestLockHelperProcess(t *testing.T) {
	path := os.Getenv("ATTEND_LOCK_HELPER")
	if path == "" {
		t.Skip("helper process of TestLockIsRefusedWhileHeldAndTakenOverWhenStale")
	}
	l, err := TryLock(path)
	if err != nil {
		os.Stdout.WriteString("error " + err.Error() + "\n")
		os.Exit(1)
	}
	os.Stdout.WriteString("locked\n")
	bufio.NewReader(os.Stdin).ReadString('\n')
	l.Unlock()
	os.Exit(0)
}

// startHolder starts a process that holds the lock at path, and waits until it does.
func startHolder(t *testing.T, path string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestLockHelperProcess$")
	cmd.Env = append(os.Environ(), "ATTEND_LOCK_HELPER="+path)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Skipf("cannot start a helper process: %v", err)
	}
	line, _ := bufio.NewReader(stdout).ReadString('\n')
	if line != "locked\n" {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("helper process: %q", line)
	}
	return cmd
}

// TestLockIsRefusedWhileHeldAndTakenOverWhenStale holds a lock in another process: TryLock is refused, naming
// that process; once it is killed with SIGKILL (leaving its lock file behind), TryLock takes the lock over.
// Within one process a second TryLock is refused too, and Unlock removes the file.
func TestLockIsRefusedWhileHeldAndTakenOverWhenStale(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m.lock")
	holder := startHolder(t, path)
	_, err := TryLock(path)
	var locked *LockedError
	if !errors.As(err, &locked) || locked.PID != holder.Process.Pid || !strings.Contains(err.Error(), strconv.Itoa(holder.Process.Pid)) {
		holder.Process.Kill()
		holder.Wait()
		t.Fatalf("TryLock of a lock held by process %d = %v, want a LockedError naming it", holder.Process.Pid, err)
	}
	holder.Process.Kill()
	holder.Wait()
	if raw, err := os.ReadFile(path); err != nil || strings.TrimSpace(string(raw)) != strconv.Itoa(holder.Process.Pid) {
		t.Fatalf("the killed holder left %q (%v), want its process id", raw, err)
	}

	l, err := TryLock(path)
	if err != nil {
		t.Fatalf("TryLock of a stale lock: %v", err)
	}
	if raw, _ := os.ReadFile(path); strings.TrimSpace(string(raw)) != strconv.Itoa(os.Getpid()) {
		t.Fatalf("lock file holds %q, want this process's id %d", raw, os.Getpid())
	}
	_, err = TryLock(path)
	if !errors.As(err, &locked) || locked.PID != os.Getpid() {
		t.Fatalf("second TryLock in the same process = %v, want a LockedError", err)
	}
	if err := l.Unlock(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Unlock left the lock file: %v", err)
	}
	l2, err := TryLock(path)
	if err != nil {
		t.Fatalf("TryLock after Unlock: %v", err)
	}
	l2.Unlock()
}

// TestLockLeftByADeadProcessIsTakenOver writes a lock file naming a process that has exited, as a run killed
// with SIGKILL leaves it: TryLock takes it.
func TestLockLeftByADeadProcessIsTakenOver(t *testing.T) {
	exited := exec.Command("true")
	if err := exited.Run(); err != nil {
		t.Skipf("cannot run a child process: %v", err)
	}
	path := filepath.Join(t.TempDir(), "m.lock")
	if err := os.WriteFile(path, []byte(strconv.Itoa(exited.Process.Pid)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := TryLock(path)
	if err != nil {
		t.Fatalf("TryLock of a lock left by a dead process: %v", err)
	}
	defer l.Unlock()
	if raw, _ := os.ReadFile(path); strings.TrimSpace(string(raw)) != strconv.Itoa(os.Getpid()) {
		t.Fatalf("lock file holds %q, want this process's id", raw)
	}
}
