package checkpoint

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// Lock is a lock file held by this process: while it is held, no other process's TryLock of the same path
// succeeds. A training run holds one beside its --out, so that two runs never write the same checkpoints.
type Lock struct {
	path string
	file *os.File
}

// LockedError is TryLock's error when another live process holds the lock.
type LockedError struct {
	Path string // the lock file
	PID  int    // the process that holds it, 0 if the file does not say (yet)
}

// Error names the lock file and the process that holds it.
func (e *LockedError) Error() string {
	if e.PID > 0 {
		return fmt.Sprintf("%s is held by process %d", e.Path, e.PID)
	}
	return fmt.Sprintf("%s is held by another process", e.Path)
}

// TryLock takes the lock file at path for this process without waiting, and writes this process's id in it.
// When another live process holds it, it returns a *LockedError naming that process. A lock file left behind
// by a process that is gone (kill -9, a power cut) is stale: TryLock takes it over. Where the system has
// flock(2) the kernel drops a dead process's lock, so a stale one is known exactly (a recycled process id
// cannot fool it); elsewhere the file is created exclusively and its process id is checked.
func TryLock(path string) (*Lock, error) {
	l, err := tryLock(path)
	if err != nil {
		var locked *LockedError
		if errors.As(err, &locked) {
			return nil, err
		}
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return l, nil
}

// Unlock removes the lock file (if it is still this lock's) and releases the lock.
func (l *Lock) Unlock() error {
	if l == nil || l.file == nil {
		return nil
	}
	var errs []error
	if held, err := l.file.Stat(); err == nil {
		if now, err := os.Stat(l.path); err == nil && os.SameFile(held, now) {
			errs = append(errs, os.Remove(l.path))
		}
	}
	errs = append(errs, l.file.Close())
	l.file = nil
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("unlock %s: %w", l.path, err)
	}
	return nil
}

// writePID replaces the content of f with this process's id.
func writePID(f *os.File) error {
	if err := f.Truncate(0); err != nil {
		return err
	}
	_, err := f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	return err
}

// readPID reads the process id that a lock file holds, 0 if it holds none.
func readPID(f *os.File) int {
	buf := make([]byte, 32)
	n, err := f.ReadAt(buf, 0)
	if err != nil && err != io.EOF {
		return 0
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(buf[:n])))
	if err != nil || pid <= 0 {
		return 0
	}
	return pid
}
