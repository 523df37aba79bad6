package main

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/attend-nmt/attend/synth"
)

// trainTiny trains a toy model through the binary and returns its checkpoint, the data directory and the
// training arguments.
func trainTiny(t *testing.T, extra ...string) (ckpt, dir string, args []string) {
	t.Helper()
	dir = t.TempDir()
	train, valid, test := synth.Split(300, 20, 5, 11)
	if err := synth.WriteFiles(dir, train, valid, test); err != nil {
		t.Fatal(err)
	}
	ckpt = filepath.Join(dir, "m.ckpt")
	args = []string{"train", "--config", "../../configs/demo.yaml", "--src", filepath.Join(dir, "train.src"),
		"--tgt", filepath.Join(dir, "train.tgt"), "--out", ckpt, "--set", "model.emb=8", "--set", "model.enc_hidden=8",
		"--set", "model.dec_hidden=8", "--set", "model.attn_dim=8", "--set", "train.log_every=4"}
	stdout, stderr, code := run(t, "", append(append(args, "--max-steps", "8"), extra...)...)
	if code != 0 {
		t.Fatalf("train exited %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	return ckpt, dir, args
}

// TestTrainLogsPlainLinesOffATerminal runs training with stderr and stdout redirected (as in a log file):
// no progress-bar frames, and one plain line per logging window on stdout.
func TestTrainLogsPlainLinesOffATerminal(t *testing.T) {
	dir := t.TempDir()
	train, valid, test := synth.Split(300, 20, 5, 12)
	synth.WriteFiles(dir, train, valid, test)
	stdout, stderr, code := run(t, "", "train", "--config", "../../configs/demo.yaml", "--src", filepath.Join(dir, "train.src"),
		"--tgt", filepath.Join(dir, "train.tgt"), "--out", filepath.Join(dir, "m.ckpt"), "--max-steps", "8",
		"--set", "train.log_every=4", "--set", "model.emb=8", "--set", "model.enc_hidden=8", "--set", "model.dec_hidden=8",
		"--set", "model.attn_dim=8")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if strings.Contains(stdout+stderr, "\r") {
		t.Fatalf("carriage returns (progress-bar frames) in a redirected log:\nstdout %q\nstderr %q", stdout, stderr)
	}
	for _, want := range []string{"the run ends at step 8\n", "step 4 of 8  epoch 1  loss ", "  ETA ", "step 8 of 8  epoch 1  loss "} {
		if !strings.Contains(stdout, want) {
			t.Fatalf("stdout lacks %q:\n%s", want, stdout)
		}
	}
}

// TestResumeWithAnotherArchitectureIsRefused is issue #11's first hole, through the command line.
func TestResumeWithAnotherArchitectureIsRefused(t *testing.T) {
	ckpt, _, args := trainTiny(t)
	before, _ := os.ReadFile(ckpt)
	for _, change := range [][]string{{"--set", "model.emb=16"}, {"--set", "model.cell=gru"}, {"--config", "../../configs/small.yaml"}} {
		_, stderr, code := run(t, "", append(append(append([]string{}, args...), "--resume", ckpt, "--max-steps", "20"), change...)...)
		if code != 1 || !strings.Contains(stderr, "cannot resume") || !strings.Contains(stderr, "in the checkpoint") {
			t.Fatalf("resume with %v: exit %d, stderr %q", change, code, stderr)
		}
	}
	if after, _ := os.ReadFile(ckpt); string(after) != string(before) {
		t.Fatal("a refused resume changed the checkpoint")
	}
	if _, stderr, code := run(t, "a b\n", "translate", "--model", ckpt); code != 0 {
		t.Fatalf("the checkpoint no longer translates: %s", stderr)
	}
}

// TestTranslateSignals starts translate on input that stays open, gets one answer, then sends a signal: SIGINT
// must exit with 130 and SIGTERM with 143, within a few seconds.
func TestTranslateSignals(t *testing.T) {
	ckpt, _, _ := trainTiny(t)
	for _, c := range []struct {
		sig  os.Signal
		code int
	}{{os.Interrupt, 130}, {syscall.SIGTERM, 143}} {
		cmd := exec.Command(attendBin, "translate", "--model", ckpt)
		stdin, _ := cmd.StdinPipe()
		stdout, _ := cmd.StdoutPipe()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		io.WriteString(stdin, "a b c\n")
		// The answer arrives while the input is still open: translate streams.
		if _, err := bufio.NewReader(stdout).ReadString('\n'); err != nil {
			t.Fatalf("no answer to an interactive line: %v", err)
		}
		cmd.Process.Signal(c.sig)
		if code := waitExit(t, cmd, 10*time.Second); code != c.code {
			t.Fatalf("%v: exit status %d (-1: still running after 10 s), want %d", c.sig, code, c.code)
		}
		stdin.Close()
	}
}

// TestTranslateHelpSaysDefaultsComeFromTheCheckpoint keeps --help truthful.
func TestTranslateHelpSaysDefaultsComeFromTheCheckpoint(t *testing.T) {
	stdout, _, _ := run(t, "", "translate", "--help")
	if !strings.Contains(stdout, "the checkpoint's decode.max_len") || !strings.Contains(stdout, "the checkpoint's decode.batch") ||
		strings.Contains(stdout, "(default 80)") || strings.Contains(stdout, "(default 64)") {
		t.Fatalf("translate --help:\n%s", stdout)
	}
}

// TestResumeCommandQuotesArguments checks the resume line of an interrupted run.
func TestResumeCommandQuotesArguments(t *testing.T) {
	got := resumeCommand([]string{"/usr/bin/attend", "train", "--src", "my corpus.de", "--resume", "old.ckpt", "--resume=x", "--out", "m.ckpt"}, "m.ckpt")
	want := "attend train --src 'my corpus.de' --out m.ckpt --resume m.ckpt"
	if got != want {
		t.Fatalf("resumeCommand = %q, want %q", got, want)
	}
}
