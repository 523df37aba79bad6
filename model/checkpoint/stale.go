package checkpoint

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// StaleAge is how long a temporary file may go unmodified before RemoveStale treats it as abandoned even when
// the process named in it seems alive (its number may since have gone to another process). A live writer
// touches its temporary many times a second.
const StaleAge = 10 * time.Minute

// tempPrefix is how the name of every temporary file of the checkpoint called base begins.
func tempPrefix(base string) string { return "." + base + ".tmp-" }

// RemoveStale removes the temporary files that writers of the checkpoint at path left behind when they died
// before renaming them (kill -9, a power cut), and returns their paths. Write names its temporary
// .NAME.tmp-PID-RANDOM, beside path; such a file is stale when process PID no longer exists, or when it has not
// been modified for StaleAge. A temporary of the older form .NAME.tmp-RANDOM, which names no process, is stale
// after StaleAge only. Nothing else is touched: not path itself, not the temporaries of other checkpoints (even
// in the same directory), not directories or links, not files whose names merely look alike.
//
// Call it before writing path, from the one process that writes it: a writer on another machine sharing the
// directory would look dead.
func RemoveStale(path string) ([]string, error) {
	return removeStale(path, time.Now(), processAlive)
}

func removeStale(path string, now time.Time, alive func(pid int) bool) ([]string, error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil // no directory, no temporaries
	}
	if err != nil {
		return nil, fmt.Errorf("remove stale temporaries of %s: %w", path, err)
	}
	var removed []string
	var errs []error
	prefix := tempPrefix(base)
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), prefix)
		if !ok || !e.Type().IsRegular() {
			continue
		}
		pid, named, ok := parseTempSuffix(rest)
		if !ok {
			continue
		}
		info, err := e.Info()
		if errors.Is(err, fs.ErrNotExist) {
			continue // renamed or removed by its writer meanwhile
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if !(named && !alive(pid)) && now.Sub(info.ModTime()) < StaleAge {
			continue
		}
		name := filepath.Join(dir, e.Name())
		if err := os.Remove(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
			continue
		}
		removed = append(removed, name)
	}
	if err := errors.Join(errs...); err != nil {
		return removed, fmt.Errorf("remove stale temporaries of %s: %w", path, err)
	}
	return removed, nil
}

// parseTempSuffix parses what follows the prefix of a temporary's name: "PID-RANDOM" (named is true) or the
// older "RANDOM", both decimal. ok is false for anything else.
func parseTempSuffix(rest string) (pid int, named, ok bool) {
	digits := func(s string) bool { return s != "" && strings.Trim(s, "0123456789") == "" }
	first, random, hasPID := strings.Cut(rest, "-")
	switch {
	case !hasPID:
		return 0, false, digits(rest)
	case !digits(first) || !digits(random):
		return 0, false, false
	}
	pid, err := strconv.Atoi(first)
	if err != nil || pid <= 0 {
		return 0, false, false
	}
	return pid, true, true
}
