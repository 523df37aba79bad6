package app

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// NamedPath is a file path with the flag or role that named it ("--out"), for messages.
type NamedPath struct{ Role, Path string }

// CheckOutputs makes sure every output can be written before any work starts: not a directory, in a directory
// that exists (it is created) and is writable, and not the same file as any input. Empty paths are skipped.
func CheckOutputs(outputs, inputs []NamedPath) error {
	for _, out := range outputs {
		if out.Path == "" {
			continue
		}
		if info, err := os.Stat(out.Path); err == nil && info.IsDir() {
			return fmt.Errorf("%s %s is a directory; give a file path, such as %s", out.Role, out.Path, filepath.Join(out.Path, "model.ckpt"))
		}
		for _, in := range inputs {
			if in.Path != "" && samePath(out.Path, in.Path) {
				return fmt.Errorf("%s %s is also %s: writing it would destroy that input", out.Role, out.Path, in.Role)
			}
		}
		dir := filepath.Dir(out.Path)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("%s %s: %w", out.Role, out.Path, err)
		}
		if err := probeWritable(out.Path); err != nil {
			return fmt.Errorf("%s %s is not writable: %w", out.Role, out.Path, err)
		}
	}
	return nil
}

// probeWritable checks that path can be written: an existing file is opened for writing (and left as it is),
// and the directory must take a new file, since checkpoints are written to a temporary file and renamed.
func probeWritable(path string) error {
	if _, err := os.Stat(path); err == nil {
		f, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err != nil {
			return err
		}
		f.Close()
	}
	f, err := os.CreateTemp(filepath.Dir(path), ".attend-probe-*")
	if err != nil {
		return err
	}
	name := f.Name()
	f.Close()
	return os.Remove(name)
}

// samePath reports whether a and b name the same file: the same cleaned absolute path, or, when both exist,
// the same file through links.
func samePath(a, b string) bool {
	absA, errA := filepath.Abs(a)
	absB, errB := filepath.Abs(b)
	if errA == nil && errB == nil && absA == absB {
		return true
	}
	infoA, errA := os.Stat(a)
	infoB, errB := os.Stat(b)
	return errA == nil && errB == nil && os.SameFile(infoA, infoB)
}

// ErrStopped is what an interruption before training's first step matches with errors.Is: nothing was written.
var ErrStopped = errors.New("stopped before any work was saved")

// interruptible runs f, returning early when ctx is cancelled: f keeps running in the background, which is
// harmless because the process is about to exit and f writes nothing. what names the phase for the message.
func interruptible(ctx context.Context, what string, f func() error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("interrupted before %s: %w", what, ErrStopped)
	}
	done := make(chan error, 1)
	go func() { done <- f() }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return fmt.Errorf("interrupted while %s: %w", what, ErrStopped)
	}
}
