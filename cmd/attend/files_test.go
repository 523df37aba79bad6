package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/attend-nmt/attend/app"
	"github.com/attend-nmt/attend/synth"
)

// snapshot describes every entry of dir: its kind, and for a regular file its content's SHA-256.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	snap := map[string]string{}
	for _, e := range entries {
		info, err := os.Lstat(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		desc := info.Mode().Type().String()
		if info.Mode().IsRegular() {
			raw, err := os.ReadFile(filepath.Join(dir, e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			sum := sha256.Sum256(raw)
			desc += " " + strconv.Itoa(len(raw)) + " " + string(sum[:])
		}
		snap[e.Name()] = desc
	}
	return snap
}

// changes lists the entries that differ between two snapshots.
func changes(before, after map[string]string) []string {
	var diff []string
	for name, desc := range before {
		if after[name] != desc {
			diff = append(diff, name+" changed or removed")
		}
	}
	for name := range after {
		if _, ok := before[name]; !ok {
			diff = append(diff, name+" created")
		}
	}
	return diff
}

// TestNoCommandDestroysAFile is issue #28's cases 1–5 and 7, and their kin in the other commands: an output that
// is a device or a named pipe, or the same file as an input or as another output, must be refused before any
// work, with exit status 1 and a message naming both, and every file must stay as it was (nothing created,
// nothing changed). The documented resume in place, --out m.ckpt --resume m.ckpt, must still work.
func TestNoCommandDestroysAFile(t *testing.T) {
	ckpt, dir, _ := trainTiny(t)
	src, tgt := filepath.Join(dir, "train.src"), filepath.Join(dir, "train.tgt")
	r := filepath.Join(dir, "r.ckpt")
	raw, err := os.ReadFile(ckpt)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, r, string(raw))
	fifo := filepath.Join(dir, "f.ckpt")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	device := filepath.Join(dir, "fake")
	haveDevice := syscall.Mknod(device, syscall.S_IFCHR|0o666, 1<<8|3) == nil // /dev/null's numbers; needs root
	gallery := filepath.Join(dir, "gallery")
	if err := os.Mkdir(gallery, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(gallery, "0001.json"), "{}\n")
	train := func(extra ...string) []string {
		return append([]string{"train", "--config", "../../configs/demo.yaml", "--src", src, "--tgt", tgt, "--max-steps", "12",
			"--set", "model.emb=8", "--set", "model.enc_hidden=8", "--set", "model.dec_hidden=8", "--set", "model.attn_dim=8"}, extra...)
	}
	in := func(name string) string { return filepath.Join(dir, name) }
	cases := []struct {
		name   string
		args   []string
		device bool     // needs the device node
		want   []string // in stderr
	}{
		{"1: --out a character device", train("--out", device), true, []string{"--out " + device + " is a character device"}},
		{"1: --out a named pipe", train("--out", fifo), false, []string{"--out " + fifo + " is a named pipe"}},
		{"1: --metrics a named pipe", train("--out", in("m2.ckpt"), "--metrics", fifo), false, []string{"--metrics " + fifo + " is a named pipe"}},
		{"1: translate --output a named pipe", []string{"translate", "--model", ckpt, "--input", src, "--output", fifo}, false, []string{"--output " + fifo + " is a named pipe"}},
		{"2: --cpuprofile the corpus", train("--out", in("m2.ckpt"), "--cpuprofile", src), false, []string{"--cpuprofile " + src + " is also --src " + src}},
		{"3: --cpuprofile the resumed checkpoint", train("--resume", r, "--out", in("r2.ckpt"), "--cpuprofile", r), false, []string{"--cpuprofile " + r + " is also --resume " + r}},
		{"4: --metrics the resumed checkpoint", train("--resume", r, "--out", in("r2.ckpt"), "--metrics", r), false, []string{"--metrics " + r + " is also --resume " + r}},
		{"5: --metrics --out, resumed in place", train("--resume", r, "--out", r, "--metrics", r), false, []string{"--metrics " + r + " is also --out " + r}},
		{"7: --metrics --out", train("--out", in("m2.ckpt"), "--metrics", in("m2.ckpt")), false, []string{"--metrics " + in("m2.ckpt") + " is also --out " + in("m2.ckpt")}},
		{"7: --metrics the best checkpoint", train("--out", in("m2.ckpt"), "--metrics", in("m2.best.ckpt")), false, []string{"--metrics " + in("m2.best.ckpt") + " is also the best checkpoint " + in("m2.best.ckpt")}},
		{"7: --cpuprofile --out", train("--out", in("m2.ckpt"), "--cpuprofile", in("m2.ckpt")), false, []string{"--cpuprofile " + in("m2.ckpt") + " is also --out " + in("m2.ckpt")}},
		{"7: --cpuprofile --metrics", train("--out", in("m2.ckpt"), "--metrics", in("x.jsonl"), "--cpuprofile", in("x.jsonl")), false, []string{"--cpuprofile " + in("x.jsonl") + " is also --metrics"}},
		{"translate --attention --output", []string{"translate", "--model", ckpt, "--input", src, "--output", in("o.txt"), "--attention", in("o.txt")}, false,
			[]string{"--attention " + in("o.txt") + " is also --output " + in("o.txt")}},
		{"translate --alignments --model", []string{"translate", "--model", ckpt, "--input", src, "--alignments", ckpt}, false, []string{"--alignments " + ckpt + " is also --model " + ckpt}},
		{"bpe learn --output its input", []string{"bpe", "learn", "--merges", "10", "--input", src, "--output", src}, false, []string{"--output " + src + " is also --input " + src}},
		{"bpe apply --output a named pipe", []string{"bpe", "apply", "--codes", src, "--input", tgt, "--output", fifo}, false, []string{"--output " + fifo + " is a named pipe"}},
		{"eval --output the references", []string{"eval", "--model", ckpt, "--src", src, "--ref", tgt, "--output", tgt}, false, []string{"--output " + tgt + " is also --ref " + tgt}},
		{"heatmap gallery over its input", []string{"heatmap", "--model", ckpt, "--input", filepath.Join(gallery, "0001.json"), "--out-dir", gallery}, false,
			[]string{"--input " + filepath.Join(gallery, "0001.json") + " is also one of the gallery's matrices"}},
		{"lexicon --out the corpus", []string{"lexicon", "--model", ckpt, "--src", src, "--tgt", tgt, "--out", tgt}, false, []string{"--out " + tgt + " is also --tgt " + tgt}},
		{"average --out an input", []string{"average", "--out", r, ckpt, r}, false, []string{"--out " + r + " is also an input " + r}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.device && !haveDevice {
				t.Skip("making a device node needs root")
			}
			before := snapshot(t, dir)
			beforeGallery := snapshot(t, gallery)
			_, stderr, code, hung := runFor(t, time.Minute, "", c.args...)
			if hung {
				t.Fatalf("still running after a minute (blocked on a named pipe?)")
			}
			if code != 1 {
				t.Errorf("exit %d, want 1; stderr: %s", code, stderr)
			}
			for _, w := range c.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr %q lacks %q", stderr, w)
				}
			}
			if diff := append(changes(before, snapshot(t, dir)), changes(beforeGallery, snapshot(t, gallery))...); len(diff) > 0 {
				t.Errorf("files touched: %v", diff)
			}
		})
	}

	// The README's resume, in place: allowed, and the checkpoint moves on.
	if _, stderr, code := run(t, "", train("--out", r, "--resume", r)...); code != 0 {
		t.Fatalf("resume in place: exit %d: %s", code, stderr)
	}
	if after, _ := os.ReadFile(r); bytes.Equal(after, raw) {
		t.Fatal("resume in place did not write the checkpoint")
	}
}

// TestSecondRunOnTheSameOutIsRefused is issue #28's case 6: while one run trains into --out, a second run on the
// same --out is refused before any work, naming the first run's process; once the first is killed with SIGKILL
// its lock file is stale and a new run goes ahead; a run that ends removes its lock file.
func TestSecondRunOnTheSameOutIsRefused(t *testing.T) {
	dir := t.TempDir()
	train, valid, test := synth.Split(2000, 20, 5, 31)
	if err := synth.WriteFiles(dir, train, valid, test); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "same.ckpt")
	args := func(seed string, steps string) []string {
		return []string{"train", "--config", "../../configs/demo.yaml", "--src", filepath.Join(dir, "train.src"),
			"--tgt", filepath.Join(dir, "train.tgt"), "--out", out, "--seed", seed, "--no-progress", "--max-steps", steps,
			"--set", "model.emb=8", "--set", "model.enc_hidden=8", "--set", "model.dec_hidden=8", "--set", "model.attn_dim=8",
			"--set", "train.log_every=1"}
	}
	first, stdout, firstErr := startAttend(t, args("1", "100000")...)
	defer func() { first.Process.Kill(); first.Wait() }()
	lines := bufio.NewScanner(stdout)
	for lines.Scan() && !strings.HasPrefix(lines.Text(), "step 1 ") {
	}
	if !strings.HasPrefix(lines.Text(), "step 1 ") {
		t.Fatalf("the first run did not start training; stderr: %s", firstErr.String())
	}
	go io.Copy(io.Discard, stdout)

	before := snapshot(t, dir)
	_, stderr, code := run(t, "", args("2", "10")...)
	pid := strconv.Itoa(first.Process.Pid)
	if code != 1 || !strings.Contains(stderr, "--out "+out+" is being written by another attend run (process "+pid) {
		t.Fatalf("second run: exit %d, stderr %q; want a refusal naming process %s", code, stderr, pid)
	}
	// Only the first run may have written meanwhile: its own checkpoint and metrics, none of the second's.
	for name, desc := range snapshot(t, dir) {
		if before[name] == desc || name == "same.ckpt" || name == "same.metrics.jsonl" || strings.HasPrefix(name, ".same.ckpt.tmp-"+pid+"-") {
			continue
		}
		t.Errorf("the refused run wrote %s", name)
	}

	first.Process.Kill()
	first.Wait()
	lock := filepath.Join(dir, "same.lock")
	if raw, err := os.ReadFile(lock); err != nil || strings.TrimSpace(string(raw)) != pid {
		t.Fatalf("the killed run's lock file holds %q (%v), want its process id", raw, err)
	}
	// The killed run may have saved a checkpoint: replacing it is what a new run on its --out means.
	if stdout, stderr, code := run(t, "", append(args("2", "10"), "--overwrite")...); code != 0 || !strings.Contains(stdout, "done: 10 steps") {
		t.Fatalf("run after the first was killed: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if _, err := os.Stat(lock); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a finished run left its lock file: %v", err)
	}
}

// TestREADMEResumeKeepsValidating is issue #28's case 15 through the binary: the README's resume command (no
// --valid-* flags) keeps validating on the files the run started with, and says so.
func TestREADMEResumeKeepsValidating(t *testing.T) {
	dir := t.TempDir()
	train, valid, test := synth.Split(300, 20, 5, 41)
	if err := synth.WriteFiles(dir, train, valid, test); err != nil {
		t.Fatal(err)
	}
	ckpt := filepath.Join(dir, "m.ckpt")
	args := []string{"train", "--config", "../../configs/demo.yaml", "--src", filepath.Join(dir, "train.src"), "--tgt", filepath.Join(dir, "train.tgt"),
		"--out", ckpt, "--no-progress", "--set", "model.emb=8", "--set", "model.enc_hidden=8", "--set", "model.dec_hidden=8", "--set", "model.attn_dim=8"}
	if _, stderr, code := run(t, "", append(args, "--valid-src", filepath.Join(dir, "valid.src"), "--valid-tgt", filepath.Join(dir, "valid.tgt"), "--max-steps", "4")...); code != 0 {
		t.Fatalf("train: exit %d: %s", code, stderr)
	}
	stdout, stderr, code := run(t, "", append(args, "--resume", ckpt, "--max-steps", "8")...)
	if code != 0 || !strings.Contains(stdout, "validating on "+filepath.Join(dir, "valid.src")+" and "+filepath.Join(dir, "valid.tgt")+" from the checkpoint") ||
		!strings.Contains(stdout, "validation at step 8 ") || !strings.Contains(stdout, "checkpoints: "+ckpt+" (last)") {
		t.Fatalf("resume: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
}

// TestBPEStopsAtOnceOnCtrlC is issue #28's case 19. bpe learn with a million merges on a large input stops
// within seconds of Ctrl-C, with status 130, and leaves --output as it was. bpe apply answers a line while its
// input is still open (it streams), and the first Ctrl-C stops it with status 130.
func TestBPEStopsAtOnceOnCtrlC(t *testing.T) {
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(19, 28))
	var text strings.Builder
	for range 10000 {
		for w := range 10 {
			if w > 0 {
				text.WriteByte(' ')
			}
			for range 4 + rng.IntN(9) {
				text.WriteByte(byte('a' + rng.IntN(26)))
			}
		}
		text.WriteByte('\n')
	}
	input, codes := filepath.Join(dir, "big.txt"), filepath.Join(dir, "codes.bpe")
	writeFile(t, input, text.String())
	writeFile(t, codes, "#version: 0.2\nt h\n")
	learn := exec.Command(attendBin, "bpe", "learn", "--merges", "1000000", "--input", input, "--output", codes)
	var stderr bytes.Buffer
	learn.Stderr = &stderr
	if err := learn.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second)
	learn.Process.Signal(os.Interrupt)
	if code := waitExit(t, learn, 10*time.Second); code != 130 {
		t.Fatalf("bpe learn after Ctrl-C: exit %d (-1: still running 10 s later), want 130; stderr: %s", code, stderr.String())
	}
	if raw, _ := os.ReadFile(codes); string(raw) != "#version: 0.2\nt h\n" {
		t.Fatalf("an interrupted bpe learn replaced --output: %q", raw)
	}

	apply := exec.Command(attendBin, "bpe", "apply", "--codes", codes)
	stdin, _ := apply.StdinPipe()
	stdout, _ := apply.StdoutPipe()
	if err := apply.Start(); err != nil {
		t.Fatal(err)
	}
	io.WriteString(stdin, "the theme\n")
	answer := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(stdout).ReadString('\n')
		answer <- line
	}()
	select {
	case line := <-answer:
		if line != "th@@ e th@@ e@@ m@@ e\n" {
			t.Errorf("bpe apply wrote %q", line)
		}
	case <-time.After(10 * time.Second):
		apply.Process.Kill()
		apply.Wait()
		t.Fatal("bpe apply did not answer a line within 10 s while its input stayed open: it does not stream")
	}
	apply.Process.Signal(os.Interrupt)
	if code := waitExit(t, apply, 10*time.Second); code != 130 {
		t.Fatalf("bpe apply after one Ctrl-C: exit %d (-1: still running 10 s later), want 130", code)
	}
	stdin.Close()
}

// TestCtrlCEndsQuietly is the last item of issue #28's case 22: a command stopped by a signal whose error only
// says that its context was cancelled (heatmap and eval stop so) prints nothing more than the signal's own
// message; other errors still print, and so does a cancellation without a signal.
func TestCtrlCEndsQuietly(t *testing.T) {
	for _, c := range []struct {
		err  error
		sig  os.Signal
		want string
	}{
		{fmt.Errorf("heatmap: %w", context.Canceled), os.Interrupt, ""},
		{context.Canceled, syscall.SIGTERM, ""},
		{context.Canceled, nil, "attend: context canceled\n"},
		{errors.New("interrupted after 3 sentences"), os.Interrupt, "attend: interrupted after 3 sentences\n"},
		{hintError{err: errors.New("training interrupted"), hint: "resume with: attend train"}, os.Interrupt, "attend: training interrupted\nresume with: attend train\n"},
		{&app.ReportedError{Err: errors.New("reported elsewhere")}, nil, ""},
	} {
		var buf bytes.Buffer
		reportError(&buf, c.err, c.sig)
		if buf.String() != c.want {
			t.Errorf("reportError(%v, %v) printed %q, want %q", c.err, c.sig, buf.String(), c.want)
		}
	}
}

// TestMessagesCountInTheRightNumber is issue #28's case 22: "1 sentences", "0 epochs done", and a directory
// given as translate --output answered with a checkpoint's name.
func TestMessagesCountInTheRightNumber(t *testing.T) {
	dir := t.TempDir()
	train, valid, test := synth.Split(300, 20, 5, 43)
	if err := synth.WriteFiles(dir, train, valid, test); err != nil {
		t.Fatal(err)
	}
	ckpt := filepath.Join(dir, "m.ckpt")
	args := []string{"train", "--config", "../../configs/demo.yaml", "--src", filepath.Join(dir, "train.src"), "--tgt", filepath.Join(dir, "train.tgt"),
		"--valid-src", filepath.Join(dir, "valid.src"), "--valid-tgt", filepath.Join(dir, "valid.tgt"), "--out", ckpt, "--no-progress",
		"--set", "model.emb=8", "--set", "model.enc_hidden=8", "--set", "model.dec_hidden=8", "--set", "model.attn_dim=8", "--set", "train.valid_every=2"}
	stdout, stderr, code := run(t, "", append(args, "--max-steps", "2")...)
	if code != 0 {
		t.Fatalf("train: exit %d: %s", code, stderr)
	}
	for _, want := range []string{"validation at step 2 (in epoch 1)", "done: 2 steps (within epoch 1), "} {
		if !strings.Contains(stdout, want) {
			t.Errorf("train output lacks %q:\n%s", want, stdout)
		}
	}
	stdout, stderr, code = run(t, "", append(args, "--out", filepath.Join(dir, "one.ckpt"), "--batch", "1000", "--max-steps", "1")...)
	if code != 0 {
		t.Fatalf("train: exit %d: %s", code, stderr)
	}
	for _, want := range []string{": 1 batch; the run ends at step 1\n", "validation at step 1 (1 epoch done)", "done: 1 step, 1 epoch, "} {
		if !strings.Contains(stdout, want) {
			t.Errorf("train output lacks %q:\n%s", want, stdout)
		}
	}
	if strings.Count(stdout, "checkpoints: ") != 1 {
		t.Errorf("the checkpoints line is not printed once:\n%s", stdout)
	}
	if _, stderr, code := run(t, "ein hund\n", "translate", "--model", ckpt); code != 0 || !strings.Contains(stderr, "translated 1 sentence in ") {
		t.Errorf("translate of one line: exit %d, stderr %q", code, stderr)
	}
	one := filepath.Join(dir, "one.txt")
	writeFile(t, one, "a b c\n")
	if stdout, stderr, code := run(t, "", "heatmap", "--model", ckpt, "--input", one, "--out-dir", filepath.Join(dir, "g")); code != 0 || !strings.Contains(stdout, "1 sentence drawn (0 empty lines skipped)") {
		t.Errorf("heatmap of one line: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	if _, stderr, code := run(t, "a b\n", "translate", "--model", ckpt, "--output", dir); code != 1 || !strings.Contains(stderr, "such as "+filepath.Join(dir, "translations.txt")) {
		t.Errorf("translate --output DIR: exit %d, stderr %q; want a file name that fits a translation", code, stderr)
	}
}

// TestOutputsReplaceOnlyWhatTheyMay is issue #51's cases 4 and 19 through the binary: a second train on the
// --out of a trained model exits 1 naming --resume and --overwrite and leaves the model as it was, and
// --overwrite replaces it; a symbolic link that leads nowhere given as train --out or lexicon --out is refused and
// stays a link.
func TestOutputsReplaceOnlyWhatTheyMay(t *testing.T) {
	dir := t.TempDir()
	train, valid, test := synth.Split(200, 10, 5, 51)
	if err := synth.WriteFiles(dir, train, valid, test); err != nil {
		t.Fatal(err)
	}
	ckpt := filepath.Join(dir, "m.ckpt")
	args := func(out string, extra ...string) []string {
		return append([]string{"train", "--config", "../../configs/demo.yaml", "--src", filepath.Join(dir, "train.src"),
			"--tgt", filepath.Join(dir, "train.tgt"), "--out", out, "--no-progress", "--max-steps", "2",
			"--set", "model.emb=8", "--set", "model.enc_hidden=8", "--set", "model.dec_hidden=8", "--set", "model.attn_dim=8"}, extra...)
	}
	if _, stderr, code := run(t, "", args(ckpt)...); code != 0 {
		t.Fatalf("train: exit %d: %s", code, stderr)
	}
	before := snapshot(t, dir)
	_, stderr, code := run(t, "", args(ckpt, "--seed", "2")...)
	if code != 1 || !strings.Contains(stderr, "--out "+ckpt+" holds a trained model; `--resume "+ckpt+"` continues it, `--overwrite` replaces it") {
		t.Fatalf("a second run on the model: exit %d, stderr %q; want a refusal naming --resume and --overwrite", code, stderr)
	}
	if after := snapshot(t, dir); !maps.Equal(before, after) {
		t.Fatalf("the refused run changed the directory:\n%v\n%v", before, after)
	}
	if stdout, stderr, code := run(t, "", args(ckpt, "--seed", "2", "--overwrite")...); code != 0 || !strings.Contains(stdout, "done: 2 steps") {
		t.Fatalf("--overwrite: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if snapshot(t, dir)["m.ckpt"] == before["m.ckpt"] {
		t.Fatal("--overwrite left the model as it was")
	}

	for _, c := range []struct{ name, link, target string }{
		{"train", filepath.Join(dir, "d.ckpt"), filepath.Join(dir, "nowhere", "d.ckpt")},
		{"lexicon", filepath.Join(dir, "e.ckpt"), filepath.Join(dir, "missing.ckpt")},
	} {
		if err := os.Symlink(c.target, c.link); err != nil {
			t.Fatal(err)
		}
		argv := args(c.link)
		if c.name == "lexicon" {
			argv = []string{"lexicon", "--model", ckpt, "--src", filepath.Join(dir, "train.src"), "--tgt", filepath.Join(dir, "train.tgt"), "--out", c.link}
		}
		_, stderr, code := run(t, "", argv...)
		if code != 1 || !strings.Contains(stderr, "--out "+c.link+" is a symbolic link that leads nowhere") {
			t.Errorf("%s --out a link to nowhere: exit %d, stderr %q", c.name, code, stderr)
		}
		if info, err := os.Lstat(c.link); err != nil || info.Mode()&os.ModeSymlink == 0 {
			t.Errorf("%s replaced the link %s (%v)", c.name, c.link, err)
		}
		if _, err := os.Lstat(c.target); err == nil {
			t.Errorf("%s created %s through the link", c.name, c.target)
		}
	}
}
