//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package checkpoint

import (
	"errors"
	"os"
	"syscall"
)

// tryLock holds flock(2) on the lock file. The file is opened, not created exclusively, so a file left by a
// dead process is simply locked again. A holder removes the file before it releases the lock, so a process
// that opened the file just before may lock a file that is no longer there: it then tries again on the new one.
func tryLock(path string) (*Lock, error) {
	for range 10 {
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			return nil, err
		}
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
			pid := readPID(f)
			f.Close()
			if errors.Is(err, syscall.EWOULDBLOCK) {
				return nil, &LockedError{Path: path, PID: pid}
			}
			return nil, err
		}
		held, err1 := f.Stat()
		now, err2 := os.Stat(path)
		if err1 == nil && err2 == nil && os.SameFile(held, now) {
			if err := writePID(f); err != nil {
				f.Close()
				return nil, err
			}
			return &Lock{path: path, file: f}, nil
		}
		f.Close() // removed or replaced since it was opened
	}
	return nil, errors.New("the lock file keeps being replaced")
}
