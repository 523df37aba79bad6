package checkpoint

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestRemoveStaleRemovesOnlyAbandonedTemporariesOfThatCheckpoint lays out a directory with the checkpoint
// m.ckpt, temporaries of it in every state, and files that only look like them, then checks which go.
// Process 100 is alive, every other is dead.
func TestRemoveStaleRemovesOnlyAbandonedTemporariesOfThatCheckpoint(t *testing.T) {
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	fresh, old := now.Add(-time.Minute), now.Add(-StaleAge-time.Second)
	alive := func(pid int) bool { return pid == 100 }
	tests := []struct {
		name    string
		file    string
		modTime time.Time
		dir     bool // a directory of that name
		removed bool
	}{
		{"writer dead", ".m.ckpt.tmp-4242-123456", fresh, false, true},
		{"writer dead, old", ".m.ckpt.tmp-4242-99", old, false, true},
		{"writer alive, fresh", ".m.ckpt.tmp-100-123456", fresh, false, false},
		{"writer alive but untouched for StaleAge", ".m.ckpt.tmp-100-7", old, false, true},
		{"older form without pid, fresh", ".m.ckpt.tmp-3141592653", fresh, false, false},
		{"older form without pid, old", ".m.ckpt.tmp-2718281828", old, false, true},
		{"the checkpoint itself", "m.ckpt", old, false, false},
		{"the best checkpoint's temporary", ".m.best.ckpt.tmp-4242-1", old, false, false},
		{"another checkpoint's temporary", ".other.ckpt.tmp-4242-1", old, false, false},
		{"a checkpoint whose name extends this one", ".m.ckpt2.tmp-4242-1", old, false, false},
		{"unhidden look-alike", "m.ckpt.tmp-4242-1", old, false, false},
		{"letters in the random part", ".m.ckpt.tmp-4242-abc", old, false, false},
		{"suffix after the digits", ".m.ckpt.tmp-4242-1.bak", old, false, false},
		{"three numbers", ".m.ckpt.tmp-4242-1-2", old, false, false},
		{"pid zero", ".m.ckpt.tmp-0-1", fresh, false, false},
		{"empty random part", ".m.ckpt.tmp-4242-", old, false, false},
		{"a directory with a temporary's name", ".m.ckpt.tmp-4243-1", old, true, false},
		{"a user's notes", "notes.txt", old, false, false},
	}
	dir := t.TempDir()
	for _, tt := range tests {
		path := filepath.Join(dir, tt.file)
		if tt.dir {
			if err := os.Mkdir(path, 0o755); err != nil {
				t.Fatal(err)
			}
		} else if err := os.WriteFile(path, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(path, tt.modTime, tt.modTime); err != nil {
			t.Fatal(err)
		}
	}
	// A link named like a dead writer's temporary is not a file this package wrote.
	link := filepath.Join(dir, ".m.ckpt.tmp-4244-1")
	if err := os.Symlink(filepath.Join(dir, "notes.txt"), link); err != nil {
		t.Fatal(err)
	}

	removed, err := removeStale(filepath.Join(dir, "m.ckpt"), now, alive)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(dir, tt.file)
			_, statErr := os.Lstat(path)
			if gone := os.IsNotExist(statErr); gone != tt.removed {
				t.Errorf("%s: removed %v, want %v", tt.file, gone, tt.removed)
			}
			if reported := slices.Contains(removed, path); reported != tt.removed {
				t.Errorf("%s: reported as removed %v, want %v", tt.file, reported, tt.removed)
			}
		})
	}
	if _, err := os.Lstat(link); err != nil {
		t.Errorf("the symbolic link was removed: %v", err)
	}
}

// TestRemoveStaleWithRealProcesses uses the real liveness check: a temporary of this (live) process stays, one
// of a process that has exited goes.
func TestRemoveStaleWithRealProcesses(t *testing.T) {
	exited := exec.Command("true")
	if err := exited.Run(); err != nil {
		t.Skipf("cannot run a child process: %v", err)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "m.ckpt")
	mine := filepath.Join(dir, ".m.ckpt.tmp-"+strconv.Itoa(os.Getpid())+"-1")
	dead := filepath.Join(dir, ".m.ckpt.tmp-"+strconv.Itoa(exited.Process.Pid)+"-1")
	for _, f := range []string{mine, dead} {
		if err := os.WriteFile(f, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	removed, err := RemoveStale(path)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(removed, []string{dead}) {
		t.Errorf("removed %v, want only %s", removed, dead)
	}
	if _, err := os.Stat(mine); err != nil {
		t.Errorf("the live process's temporary is gone: %v", err)
	}
}

// TestRemoveStaleWithoutDirectory: a checkpoint whose directory does not exist yet has no temporaries.
func TestRemoveStaleWithoutDirectory(t *testing.T) {
	removed, err := RemoveStale(filepath.Join(t.TempDir(), "absent", "m.ckpt"))
	if err != nil || len(removed) != 0 {
		t.Fatalf("RemoveStale = %v, %v; want nothing and no error", removed, err)
	}
}

// TestWriteNamesItsTemporaryAfterItsProcess catches the temporary of a write that fails midway, before it is
// removed, and checks that it carries this process's id, which is what lets RemoveStale judge it.
func TestWriteNamesItsTemporaryAfterItsProcess(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "m.ckpt")
	var seen []string
	err := writeAtomic(path, func(io.Writer) error {
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			seen = append(seen, e.Name())
		}
		return os.ErrClosed
	})
	if err == nil {
		t.Fatal("the failing write succeeded")
	}
	prefix := ".m.ckpt.tmp-" + strconv.Itoa(os.Getpid()) + "-"
	if len(seen) != 1 || !strings.HasPrefix(seen[0], prefix) {
		t.Fatalf("directory during the write: %v, want one file starting %s", seen, prefix)
	}
	if _, named, ok := parseTempSuffix(strings.TrimPrefix(seen[0], ".m.ckpt.tmp-")); !ok || !named {
		t.Fatalf("RemoveStale would not recognise %s as a temporary of m.ckpt", seen[0])
	}
}
