package app

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/attend-nmt/attend/model/checkpoint"
)

// NamedPath is a file path with the flag or role that named it ("--out"), for messages. Every command lists
// each file it reads and each file it writes as NamedPaths and hands them to CheckOutputs before any work.
type NamedPath struct {
	Role, Path string
	// Pattern makes Path a glob (see GlobOf) standing for every file of that shape that the command may write
	// or remove, such as the step checkpoints NAME.step-*.ckpt of train.keep_last or the temporaries
	// .NAME.ckpt.tmp-* of an atomic save.
	Pattern bool
	// Replaceable, on an output, marks a file written whole to a temporary and renamed over Path (a checkpoint);
	// on an input, a file read whole before anything is written that the command is meant to replace (the
	// checkpoint a run resumes from). An output and an input that are both Replaceable may be the same file:
	// `--out m.ckpt --resume m.ckpt` continues a run in place, and the old file stays whole until the new
	// one replaces it.
	Replaceable bool
	// Example is a file name that fits this output ("model.ckpt"), offered when Path is a directory; without
	// one the message asks for a file in that directory.
	Example string
	// Own, on an output, tells a file attend may replace there from one it must not: nil for a file the user
	// named to be written whatever it holds (translate --output); for a kind only attend writes (a checkpoint,
	// the metrics log, the lock file) and for every file attend names itself beside another (NAME.align,
	// NAME.best.ckpt, NAME.step-N.ckpt …), a check (OwnCheckpoint, OwnMetrics, OwnLock, or one of the
	// command's) that returns nil when the existing file at the given path is attend's own, else what it is
	// instead ("is not an attend checkpoint …"). An empty file is anyone's. With Pattern, every existing file
	// the pattern matches is checked.
	Own func(path string) error
	// Keep, on an output whose existing file (not empty) attend may replace, refuses to replace it all the
	// same: it holds work a user wants (a trained model that a new run would overwrite). The error is the role,
	// the path and Keep, which says what the file holds and how to go on ("holds a trained model; …").
	Keep string
}

// CheckOutputs makes sure, before any work, that running the command can destroy nothing and that its outputs
// can be written. It refuses, naming both roles and paths:
//
//   - an output that exists and is not a regular file: a directory, a device such as /dev/null, a named pipe
//     (opening one would block), a socket (checked with Stat, before anything is opened), a symbolic link
//     that leads nowhere;
//   - an output that is the same file as an input (by path, or through links), or that an output pattern
//     would cover, unless both are Replaceable;
//   - two outputs that are the same file, or a file and a pattern that covers it;
//   - an existing file that is not the output's kind (NamedPath.Own: a stray NAME.align, notes at a checkpoint's
//     path), or that holds work to keep (NamedPath.Keep: a trained model a new run would replace).
//
// Then it creates the outputs' directories and checks that each is writable and takes new files (checkpoints
// are written to a temporary beside them). Empty paths are skipped. Pattern outputs are compared, and the files
// they match checked by Own and Keep.
func CheckOutputs(outputs, inputs []NamedPath) error {
	for i, out := range outputs {
		if out.Path == "" {
			continue
		}
		if !out.Pattern {
			if err := checkKind(out); err != nil {
				return err
			}
		}
		for _, in := range inputs {
			if in.Path == "" || in.Pattern || out.Replaceable && in.Replaceable {
				continue
			}
			if covers(out, in.Path) {
				if out.Pattern {
					return fmt.Errorf("%s %s is also one of %s %s: writing them would destroy that input", in.Role, in.Path, out.Role, out.Path)
				}
				return fmt.Errorf("%s %s is also %s %s: writing it would destroy that input", out.Role, out.Path, in.Role, in.Path)
			}
		}
		for _, other := range outputs[i+1:] {
			if other.Path == "" || out.Pattern && other.Pattern {
				continue
			}
			switch {
			case other.Pattern && covers(other, out.Path):
				return fmt.Errorf("%s %s is also one of %s %s: one file cannot hold both", out.Role, out.Path, other.Role, other.Path)
			case covers(out, other.Path):
				return fmt.Errorf("%s %s is also %s %s: one file cannot hold both", other.Role, other.Path, out.Role, out.Path)
			}
		}
	}
	for _, out := range outputs {
		if err := checkOwner(out); err != nil {
			return err
		}
	}
	for _, out := range outputs {
		if out.Path == "" || out.Pattern {
			continue
		}
		if err := os.MkdirAll(filepath.Dir(out.Path), 0o755); err != nil {
			return fmt.Errorf("%s %s: %w", out.Role, out.Path, err)
		}
		if err := probeWritable(out.Path); err != nil {
			return fmt.Errorf("%s %s is not writable: %w", out.Role, out.Path, err)
		}
	}
	return nil
}

// checkKind refuses an output that exists and is not a regular file. Stat follows links: a link to /dev/null
// is a device too, and a link that leads nowhere (its target missing, or a loop) is refused, since writing
// would replace the link with a regular file (or create a file wherever it points). Nothing is opened, so a
// named pipe cannot block the check.
func checkKind(out NamedPath) error {
	info, err := os.Stat(out.Path)
	if err != nil {
		if link, lerr := os.Lstat(out.Path); lerr == nil && link.Mode()&fs.ModeSymlink != 0 {
			target, _ := os.Readlink(out.Path)
			return fmt.Errorf("%s %s is a symbolic link that leads nowhere (to %s: %v): attend writes only regular files; give the path of one",
				out.Role, out.Path, target, errors.Unwrap(err))
		}
		return nil // missing (it will be created), or a failure that the writability probe reports
	}
	switch mode := info.Mode(); {
	case mode.IsRegular():
		return nil
	case mode.IsDir():
		if out.Example != "" {
			return fmt.Errorf("%s %s is a directory; give a file path, such as %s", out.Role, out.Path, filepath.Join(out.Path, out.Example))
		}
		return fmt.Errorf("%s %s is a directory; give the path of a file", out.Role, out.Path)
	default:
		return fmt.Errorf("%s %s is %s, not a regular file: attend writes only regular files; give the path of one", out.Role, out.Path, describeMode(mode))
	}
}

// checkOwner refuses to replace an existing file (not empty) of out that out.Own says is not attend's own, or
// that out.Keep keeps; for a Pattern, each file it matches. Only regular files are judged (checkKind refuses
// the others); reading the start of one cannot block.
func checkOwner(out NamedPath) error {
	if out.Path == "" || out.Own == nil && out.Keep == "" {
		return nil
	}
	paths := []string{out.Path}
	if out.Pattern {
		paths, _ = filepath.Glob(out.Path) // the only error is a malformed pattern, which GlobOf never makes
	}
	for _, path := range paths {
		if info, err := os.Stat(path); err != nil || !info.Mode().IsRegular() || info.Size() == 0 {
			continue
		}
		if out.Own != nil {
			if err := out.Own(path); err != nil {
				return fmt.Errorf("%s %s %v; attend replaces only the files it wrote: move it away (or remove it) to let attend write there",
					out.Role, path, err)
			}
		}
		if out.Keep != "" {
			return fmt.Errorf("%s %s %s", out.Role, path, out.Keep)
		}
	}
	return nil
}

// judgeHead reads the first n bytes of the file at path (fewer when it is shorter) and returns what judge says
// of them: the body of a NamedPath.Own.
func judgeHead(path string, n int, judge func(head []byte) error) error {
	f, err := os.Open(path)
	if err == nil {
		defer f.Close()
		head := make([]byte, n)
		var k int
		if k, err = io.ReadFull(f, head); err == nil || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
			return judge(head[:k])
		}
	}
	return fmt.Errorf("cannot be read (%w)", err)
}

// OwnCheckpoint is a NamedPath.Own for checkpoints: the file must start as every attend checkpoint does
// (checkpoint.HasMagic).
func OwnCheckpoint(path string) error {
	return judgeHead(path, 64, func(head []byte) error {
		if !checkpoint.HasMagic(head) {
			return fmt.Errorf("is not an attend checkpoint (it starts with %q)", firstLine(head, 24))
		}
		return nil
	})
}

// OwnMetrics is a NamedPath.Own for metrics logs: the file's first line must be a JSON record of attend's
// (an object with a "step"), or the start of one cut short by a crash.
func OwnMetrics(path string) error {
	return judgeHead(path, 64<<10, func(head []byte) error {
		line, _, complete := bytes.Cut(head, []byte("\n"))
		if !complete && len(head) < 64<<10 && bytes.HasPrefix(line, []byte(`{"`)) {
			return nil // the first record, cut short
		}
		var rec struct {
			Step *int `json:"step"`
		}
		if json.Unmarshal(line, &rec) != nil || rec.Step == nil {
			return fmt.Errorf("is not a metrics log of attend's (its first line is %q, not a JSON record with a \"step\")", firstLine(head, 40))
		}
		return nil
	})
}

// OwnLock is a NamedPath.Own for lock files (checkpoint.TryLock): the file must hold a process id.
func OwnLock(path string) error {
	return judgeHead(path, 64, func(head []byte) error {
		if n, err := strconv.Atoi(strings.TrimSpace(string(head))); err != nil || n <= 0 {
			return fmt.Errorf("is not a lock file of attend's (it holds %q, not a process id)", firstLine(head, 24))
		}
		return nil
	})
}

// firstLine is the start of the first line of head, at most n bytes, for messages.
func firstLine(head []byte, n int) string {
	line, _, _ := bytes.Cut(head, []byte("\n"))
	if len(line) > n {
		line = line[:n]
	}
	return string(line)
}

// describeMode names the kind of a file that is not regular, with its article.
func describeMode(mode fs.FileMode) string {
	switch {
	case mode&fs.ModeCharDevice != 0:
		return "a character device"
	case mode&fs.ModeDevice != 0:
		return "a block device"
	case mode&fs.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case mode&fs.ModeSocket != 0:
		return "a socket"
	default:
		return "a special file"
	}
}

// probeWritable checks that path can be written: an existing file (a regular one: see checkKind) is opened for
// writing and left as it is, and the directory must take a new file, since checkpoints are written to a
// temporary file and renamed.
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

// covers reports whether writing out would write the file at path: the same file (samePath), or for a pattern
// a file whose name it matches in the same directory.
func covers(out NamedPath, path string) bool {
	if !out.Pattern {
		return samePath(out.Path, path)
	}
	dir, glob := filepath.Split(out.Path)
	pdir, name := filepath.Split(resolve(path))
	if ok, err := filepath.Match(glob, name); err != nil || !ok {
		return false
	}
	return resolve(filepath.Join(dir, ".")) == filepath.Clean(pdir)
}

// samePath reports whether a and b name the same file: the same path once made absolute and rid of links
// (so that a file not written yet is still recognised through a linked directory), or, when both exist, the
// same file through hard links.
func samePath(a, b string) bool {
	if resolve(a) == resolve(b) {
		return true
	}
	infoA, errA := os.Stat(a)
	infoB, errB := os.Stat(b)
	return errA == nil && errB == nil && os.SameFile(infoA, infoB)
}

// resolve returns path made absolute with its links resolved: the whole path when it exists, else its
// directory's, else just the absolute path.
func resolve(path string) string {
	abs, err := filepath.Abs(path)
	if err != nil {
		return filepath.Clean(path)
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		return real
	}
	dir, name := filepath.Split(abs)
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		return filepath.Join(real, name)
	}
	return abs
}

// GlobOf is the pattern of the files named prefix, then anything, then suffix, in the directory of prefix: the
// Path of a Pattern NamedPath. Characters that are special in a glob are escaped in both parts.
func GlobOf(prefix, suffix string) string {
	dir, name := filepath.Split(prefix)
	return dir + globEscape(name) + "*" + globEscape(suffix)
}

// globEscape escapes the characters that filepath.Match treats as special.
func globEscape(s string) string {
	return strings.NewReplacer(`\`, `\\`, `*`, `\*`, `?`, `\?`, `[`, `\[`).Replace(s)
}

// CheckpointOutputs are the files written when a checkpoint is saved at path, for CheckOutputs: the file itself
// (Replaceable: written atomically; it replaces only a checkpoint, OwnCheckpoint) and its temporaries.
func CheckpointOutputs(role, path string) []NamedPath {
	if path == "" {
		return nil
	}
	return []NamedPath{{Role: role, Path: path, Replaceable: true, Example: "model.ckpt", Own: OwnCheckpoint}, TemporariesOf(role, path)}
}

// TemporariesOf is the pattern of the temporary files through which path is written atomically
// (.NAME.tmp-*, see checkpoint.WriteFile), for CheckOutputs.
func TemporariesOf(role, path string) NamedPath {
	dir, name := filepath.Split(path)
	return NamedPath{Role: "the temporary files of " + role, Path: GlobOf(dir+"."+name+".tmp-", ""), Pattern: true}
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
