//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package checkpoint

import (
	"errors"
	"io/fs"
	"os"
)

// tryLock creates the lock file exclusively. One that exists names its process: when processAlive says that
// process is gone, the file is stale and is replaced (where processAlive cannot tell, a stale lock file must be
// removed by hand; the error names it).
func tryLock(path string) (*Lock, error) {
	for range 2 {
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
		if err == nil {
			if err := writePID(f); err != nil {
				f.Close()
				os.Remove(path)
				return nil, err
			}
			return &Lock{path: path, file: f}, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return nil, err
		}
		old, err := os.Open(path)
		if err != nil {
			continue // removed meanwhile
		}
		pid := readPID(old)
		old.Close()
		if pid == 0 || processAlive(pid) {
			return nil, &LockedError{Path: path, PID: pid}
		}
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
	}
	return nil, errors.New("the lock file keeps being replaced")
}
