package app

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestCheckOutputsRefusesWhatWouldDestroyAFile is a table of outputs and inputs: each row must be refused with
// a message naming both roles and paths, or accepted, and a refusal must come before anything is opened (a
// named pipe would block an open).
func TestCheckOutputsRefusesWhatWouldDestroyAFile(t *testing.T) {
	dir := t.TempDir()
	in := func(name string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte("data\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	src, ckpt, step := in("s.de"), in("r.ckpt"), in("m.step-40.ckpt")
	fifo := filepath.Join(dir, "f.ckpt")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "s.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := os.Mkdir(filepath.Join(dir, "real"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(dir, "real"), filepath.Join(dir, "alias")); err != nil {
		t.Fatal(err)
	}
	hard := filepath.Join(dir, "hard.de")
	if err := os.Link(src, hard); err != nil {
		t.Fatal(err)
	}
	linkToNull := filepath.Join(dir, "null.ckpt")
	if err := os.Symlink(os.DevNull, linkToNull); err != nil {
		t.Fatal(err)
	}
	type np = NamedPath
	cases := []struct {
		name            string
		outputs, inputs []NamedPath
		want            []string // all in the error; none: accepted
	}{
		{"character device", []np{{Role: "--out", Path: os.DevNull}}, nil, []string{"--out " + os.DevNull + " is a character device"}},
		{"link to a device", []np{{Role: "--out", Path: linkToNull}}, nil, []string{"--out " + linkToNull + " is a character device"}},
		{"named pipe", []np{{Role: "--out", Path: fifo}}, nil, []string{"--out " + fifo + " is a named pipe"}},
		{"socket", []np{{Role: "--attention", Path: sock}}, nil, []string{"--attention " + sock + " is a socket"}},
		{"profile over the corpus", []np{{Role: "--out", Path: filepath.Join(dir, "m.ckpt"), Replaceable: true}, {Role: "--cpuprofile", Path: src}},
			[]np{{Role: "--src", Path: src}}, []string{"--cpuprofile " + src + " is also --src " + src}},
		{"through a hard link", []np{{Role: "--metrics", Path: hard}}, []np{{Role: "--src", Path: src}}, []string{"--metrics " + hard + " is also --src " + src}},
		{"profile over the resumed checkpoint", []np{{Role: "--cpuprofile", Path: ckpt}}, []np{{Role: "--resume", Path: ckpt, Replaceable: true}},
			[]string{"--cpuprofile " + ckpt + " is also --resume " + ckpt}},
		{"metrics over --out", []np{{Role: "--out", Path: ckpt, Replaceable: true}, {Role: "--metrics", Path: ckpt}}, []np{{Role: "--resume", Path: ckpt, Replaceable: true}},
			[]string{"--metrics " + ckpt, "--out " + ckpt}},
		{"two outputs not written yet", []np{{Role: "--out", Path: filepath.Join(dir, "n.ckpt")}, {Role: "--metrics", Path: filepath.Join(dir, "n.ckpt")}}, nil,
			[]string{"--metrics", "is also --out", "one file cannot hold both"}},
		{"two outputs through a linked directory", []np{{Role: "--output", Path: filepath.Join(dir, "real", "o.txt")}, {Role: "--alignments", Path: filepath.Join(dir, "alias", "o.txt")}}, nil,
			[]string{"--alignments " + filepath.Join(dir, "alias", "o.txt") + " is also --output"}},
		{"input among the step checkpoints", []np{{Role: "the step checkpoints", Path: GlobOf(filepath.Join(dir, "m.step-"), ".ckpt"), Pattern: true}},
			[]np{{Role: "--src", Path: step}}, []string{"--src " + step + " is also one of the step checkpoints"}},
		{"output among the temporaries", []np{{Role: "--metrics", Path: filepath.Join(dir, ".m.ckpt.tmp-1-2")}, {Role: "the temporary files of --out", Path: GlobOf(filepath.Join(dir, ".m.ckpt.tmp-"), ""), Pattern: true}}, nil,
			[]string{"--metrics", "is also one of the temporary files of --out"}},
		{"directory, with an example", []np{{Role: "--out", Path: dir, Example: "model.ckpt"}}, nil, []string{"is a directory", "such as " + filepath.Join(dir, "model.ckpt")}},
		{"directory, without one", []np{{Role: "--output", Path: dir}}, nil, []string{"is a directory; give the path of a file"}},

		{"resume in place", []np{{Role: "--out", Path: ckpt, Replaceable: true}}, []np{{Role: "--resume", Path: ckpt, Replaceable: true}}, nil},
		{"resume from a step checkpoint", []np{{Role: "the step checkpoints", Path: GlobOf(filepath.Join(dir, "m.step-"), ".ckpt"), Pattern: true, Replaceable: true}},
			[]np{{Role: "--resume", Path: step, Replaceable: true}}, nil},
		{"an input another command only reads", []np{{Role: "--out", Path: ckpt, Replaceable: true}}, []np{{Role: "an input", Path: ckpt}}, []string{"--out " + ckpt + " is also an input"}},
		{"a glob character in a name", []np{{Role: "p", Path: GlobOf(filepath.Join(dir, "a[1]."), ""), Pattern: true}}, []np{{Role: "--src", Path: src}}, nil},
		{"distinct files", []np{{Role: "--out", Path: filepath.Join(dir, "x.ckpt")}, {Role: "--metrics", Path: filepath.Join(dir, "x.metrics.jsonl")}},
			[]np{{Role: "--src", Path: src}}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			done := make(chan error, 1)
			go func() { done <- CheckOutputs(c.outputs, c.inputs) }()
			var err error
			select {
			case err = <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("CheckOutputs still running after 10 s (did it open a named pipe?)")
			}
			requireRefusal(t, err, c.want)
		})
	}
	if raw, err := os.ReadFile(src); err != nil || string(raw) != "data\n" {
		t.Fatalf("the corpus changed: %q, %v", raw, err)
	}
	if info, err := os.Lstat(fifo); err != nil || info.Mode()&os.ModeNamedPipe == 0 {
		t.Fatalf("the named pipe is gone: %v", err)
	}
}

// TestCheckOutputsRefusesALinkToNowhere is issue #51's case 19: an output that is a symbolic link to a missing
// file (or a loop) would be replaced by a regular file, or create one wherever it points: refused like the
// other outputs that are not regular files, and the link stays.
func TestCheckOutputsRefusesALinkToNowhere(t *testing.T) {
	dir := t.TempDir()
	dangling, loop := filepath.Join(dir, "d.ckpt"), filepath.Join(dir, "loop.txt")
	if err := os.Symlink(filepath.Join(dir, "missing", "m.ckpt"), dangling); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(loop, loop); err != nil {
		t.Fatal(err)
	}
	for _, out := range []NamedPath{CheckpointOutputs("--out", dangling)[0], {Role: "--output", Path: loop}} {
		err := CheckOutputs([]NamedPath{out}, nil)
		if err == nil || !strings.Contains(err.Error(), out.Role+" "+out.Path+" is a symbolic link that leads nowhere") {
			t.Errorf("CheckOutputs(%s) = %v, want a refusal of the link", out.Path, err)
		}
		if info, err := os.Lstat(out.Path); err != nil || info.Mode()&os.ModeSymlink == 0 {
			t.Errorf("%s is no longer a link (%v)", out.Path, err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "missing")); err == nil {
		t.Error("the link's target directory was created")
	}
}

// TestCheckOutputsReplacesOnlyAttendsOwnFiles is issue #51's cases 2 and 4 at the guard: an output with Own
// replaces only a file of attend's of its kind (or an empty one), for a pattern every file it matches; Keep
// refuses even attend's own, saying how to go on; outputs without either replace anything regular.
func TestCheckOutputsReplacesOnlyAttendsOwnFiles(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	notes, empty, ckpt := write("notes.ckpt", "my notes\n"), write("empty.ckpt", ""), write("c.ckpt", "ATTNCKPT\x01\x00\x00\x00rest")
	metrics := write("m.metrics.jsonl", `{"event":"step","step":5,"loss":3}`+"\n")
	cut := write("cut.metrics.jsonl", `{"event":"st`)
	text := write("t.metrics.jsonl", "step 5 loss 3\n")
	lock, badLock := write("m.lock", "1234\n"), write("b.lock", "keep me")
	write("s.step-10.ckpt", "ATTNCKPT\x01\x00\x00\x00")
	write("s.step-20.ckpt", "not one")
	steps := GlobOf(filepath.Join(dir, "s.step-"), ".ckpt")
	type np = NamedPath
	cases := []struct {
		name string
		out  NamedPath
		want []string // all in the error; none: accepted
	}{
		{"notes at a checkpoint's path", CheckpointOutputs("--out", notes)[0], []string{"--out " + notes + " is not an attend checkpoint", `"my notes"`, "move it away"}},
		{"an empty file", CheckpointOutputs("--out", empty)[0], nil},
		{"a checkpoint", CheckpointOutputs("--out", ckpt)[0], nil},
		{"a missing file", CheckpointOutputs("--out", filepath.Join(dir, "new.ckpt"))[0], nil},
		{"a checkpoint kept", np{Role: "--out", Path: ckpt, Own: OwnCheckpoint, Keep: "holds a trained model; --overwrite replaces it"},
			[]string{"--out " + ckpt + " holds a trained model; --overwrite replaces it"}},
		{"an empty file is not kept", np{Role: "--out", Path: empty, Own: OwnCheckpoint, Keep: "holds a trained model"}, nil},
		{"a metrics log", np{Role: "the metrics file", Path: metrics, Own: OwnMetrics}, nil},
		{"a metrics log cut short", np{Role: "the metrics file", Path: cut, Own: OwnMetrics}, nil},
		{"text at the metrics log's path", np{Role: "the metrics file", Path: text, Own: OwnMetrics}, []string{"the metrics file " + text + " is not a metrics log"}},
		{"a lock file", np{Role: "the lock file", Path: lock, Own: OwnLock}, nil},
		{"text at the lock file's path", np{Role: "the lock file", Path: badLock, Own: OwnLock}, []string{"the lock file " + badLock + " is not a lock file", `"keep me"`}},
		{"a stray file among the step checkpoints", np{Role: "the step checkpoints", Path: steps, Pattern: true, Own: OwnCheckpoint},
			[]string{"the step checkpoints " + filepath.Join(dir, "s.step-20.ckpt") + " is not an attend checkpoint"}},
		{"a file the user named", np{Role: "--output", Path: notes}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := CheckOutputs([]NamedPath{c.out}, nil)
			requireRefusal(t, err, c.want)
		})
	}
	if raw, err := os.ReadFile(notes); err != nil || string(raw) != "my notes\n" {
		t.Fatalf("the notes changed: %q, %v", raw, err)
	}
}

// requireRefusal fails t unless err holds every text of want, or is nil when want is.
func requireRefusal(t *testing.T, err error, want []string) {
	t.Helper()
	switch {
	case want == nil && err != nil:
		t.Fatalf("refused: %v", err)
	case want != nil && err == nil:
		t.Fatalf("accepted, want an error mentioning %q", want)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Fatalf("error %q lacks %q", err, w)
		}
	}
}
