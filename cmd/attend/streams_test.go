package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestEndlessInputIsRefused is issue #51's case 1: a file without newlines (/dev/zero) given to any reader of
// lines grew a line in memory without bound (train --src /dev/zero: 250 MB/s), or was counted for a progress
// total forever (translate --input /dev/zero). Each command below must fail within seconds, in 4 GB of address
// space, with an error naming the file and the limit it passed.
func TestEndlessInputIsRefused(t *testing.T) {
	if _, err := os.Stat("/dev/zero"); err != nil {
		t.Skip("no /dev/zero")
	}
	ckpt, dir, _ := trainTiny(t)
	src, tgt := filepath.Join(dir, "train.src"), filepath.Join(dir, "train.tgt")
	codes := filepath.Join(dir, "codes.bpe")
	writeFile(t, codes, "#version: 0.2\na b\n")
	const zero = "/dev/zero"
	for _, c := range []struct {
		name  string
		args  []string
		limit string // what the message says about the limit
	}{
		{"train --src", []string{"train", "--config", "../../configs/demo.yaml", "--src", zero, "--tgt", tgt, "--out", filepath.Join(dir, "z1.ckpt")}, "1 MiB"},
		{"train --tgt", []string{"train", "--config", "../../configs/demo.yaml", "--src", src, "--tgt", zero, "--out", filepath.Join(dir, "z2.ckpt")}, "1 MiB"},
		{"train --data", []string{"train", "--config", "../../configs/demo.yaml", "--data", zero, "--out", filepath.Join(dir, "z3.ckpt")}, "1 MiB"},
		{"train --config", []string{"train", "--config", zero, "--src", src, "--tgt", tgt, "--out", filepath.Join(dir, "z4.ckpt")}, "16 MiB"},
		{"translate --input", []string{"translate", "--model", ckpt, "--input", zero}, "1 MiB"},
		{"heatmap --input", []string{"heatmap", "--model", ckpt, "--input", zero, "--out-dir", filepath.Join(dir, "g")}, "1 MiB"},
		{"eval --hyp", []string{"eval", "--hyp", zero, "--ref", tgt}, "1 MiB"},
		{"eval --ref", []string{"eval", "--hyp", tgt, "--ref", zero}, "1 MiB"},
		{"eval --src", []string{"eval", "--model", ckpt, "--src", zero, "--ref", tgt}, "1 MiB"},
		{"align --gold", []string{"align", "--model", ckpt, "--src", src, "--tgt", tgt, "--gold", zero}, "1 MiB"},
		{"align --src", []string{"align", "--model", ckpt, "--src", zero, "--tgt", tgt}, "1 MiB"},
		{"bpe apply --codes", []string{"bpe", "apply", "--codes", zero, "--input", src}, "1 MiB"},
		{"bpe apply --input", []string{"bpe", "apply", "--codes", codes, "--input", zero}, "1 MiB"},
		{"bpe learn --input", []string{"bpe", "learn", "--merges", "10", "--input", zero}, "1 MiB"},
		{"lexicon --src", []string{"lexicon", "--model", ckpt, "--src", zero, "--tgt", tgt, "--out", filepath.Join(dir, "lex.ckpt")}, "1 MiB"},
		{"plot --metrics", []string{"plot", "--metrics", zero, "--out", filepath.Join(dir, "c.png")}, "1 MiB"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, stderr, code, took := runLimited(t, 30*time.Second, c.args...)
			if code != 1 || !strings.Contains(stderr, zero) || !strings.Contains(stderr, c.limit) {
				t.Fatalf("exit %d after %v (-1: still running after 30 s); want exit 1 with an error naming %s and the limit (%s):\n%s",
					code, took.Round(time.Millisecond), zero, c.limit, stderr)
			}
		})
	}
}

// TestSignalBeforeTheWorkQuitsAtOnce is issue #51's case 5: a command blocked opening a FIFO that no one writes
// (so before its work has started) printed "stopping at the next safe point" at the first SIGINT or SIGTERM and
// went on waiting forever. It must exit at once with 130 (143). A command that has started and waits for input on
// a FIFO whose writer is silent (translate, bpe apply) stops at the first signal too.
func TestSignalBeforeTheWorkQuitsAtOnce(t *testing.T) {
	ckpt, dir, _ := trainTiny(t)
	src, tgt := filepath.Join(dir, "train.src"), filepath.Join(dir, "train.tgt")
	codes := filepath.Join(dir, "codes.bpe")
	writeFile(t, codes, "#version: 0.2\na b\n")
	for _, c := range []struct {
		name   string
		args   []string // "FIFO" stands for a new FIFO
		writer bool     // a writer opens the FIFO and stays silent: the command has started and waits for a line
	}{
		{"translate --model", []string{"translate", "--model", "FIFO"}, false},
		{"translate --input", []string{"translate", "--model", ckpt, "--input", "FIFO"}, false},
		{"serve --model", []string{"serve", "--model", "FIFO", "--addr", "127.0.0.1:0"}, false},
		{"train --config", []string{"train", "--config", "FIFO", "--src", src, "--tgt", tgt, "--out", filepath.Join(dir, "f.ckpt")}, false},
		{"train --src", []string{"train", "--config", "../../configs/demo.yaml", "--src", "FIFO", "--tgt", tgt, "--out", filepath.Join(dir, "g.ckpt")}, false},
		{"eval --hyp", []string{"eval", "--hyp", "FIFO", "--ref", tgt}, false},
		{"bpe apply --codes", []string{"bpe", "apply", "--codes", "FIFO", "--input", src}, false},
		{"heatmap --input", []string{"heatmap", "--model", ckpt, "--input", "FIFO", "--out-dir", filepath.Join(dir, "gallery")}, false},
		{"translate --input, started", []string{"translate", "--model", ckpt, "--input", "FIFO"}, true},
		{"bpe apply --input, started", []string{"bpe", "apply", "--codes", codes, "--input", "FIFO"}, true},
	} {
		for _, s := range []struct {
			sig  os.Signal
			code int
		}{{os.Interrupt, 130}, {syscall.SIGTERM, 143}} {
			t.Run(fmt.Sprintf("%s/%v", c.name, s.sig), func(t *testing.T) {
				path := filepath.Join(t.TempDir(), "fifo")
				if err := syscall.Mkfifo(path, 0o600); err != nil {
					t.Skipf("mkfifo: %v", err)
				}
				args := slices.Clone(c.args)
				args[slices.Index(args, "FIFO")] = path
				cmd := exec.Command(attendBin, args...)
				var stderr lockedBuffer
				cmd.Stderr = &stderr
				if err := cmd.Start(); err != nil {
					t.Fatal(err)
				}
				if c.writer {
					// Opening the FIFO for writing returns once the command has opened it for reading.
					w, err := os.OpenFile(path, os.O_WRONLY, 0)
					if err != nil {
						t.Fatal(err)
					}
					defer w.Close()
				}
				time.Sleep(500 * time.Millisecond) // time to block in open(2) or in the first read
				cmd.Process.Signal(s.sig)
				if code := waitExit(t, cmd, 5*time.Second); code != s.code {
					t.Fatalf("exit %d after a %v (-1: still running 5 s later), want %d; stderr:\n%s", code, s.sig, s.code, stderr.String())
				}
			})
		}
	}
}
