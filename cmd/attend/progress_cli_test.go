package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestLongCommandsShowPlainProgress runs the commands that can work for long with standard error not a
// terminal, as in a log file: each writes plain progress lines, with the work done, its total and an ETA, and a
// last line when done (--progress-every 1ns shows them for work this short; the default is one per 10 s), never a
// carriage return; its standard output is byte for byte that of a run with --quiet, which shows no progress.
func TestLongCommandsShowPlainProgress(t *testing.T) {
	ckpt, dir, _ := trainTiny(t)
	src, tgt := filepath.Join(dir, "train.src"), filepath.Join(dir, "train.tgt")
	in, ref := filepath.Join(dir, "many.src"), filepath.Join(dir, "many.tgt")
	for _, f := range [][2]string{{src, in}, {tgt, ref}} {
		b, err := os.ReadFile(f[0])
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, f[1], strings.Join(strings.Split(string(b), "\n")[:60], "\n")+"\n")
	}
	for _, c := range []struct {
		name  string
		stdin string // a file given as standard input
		args  []string
		want  []string
	}{
		{"translate", "", []string{"translate", "-m", ckpt, "-i", in, "--batch", "8"},
			[]string{"translating " + in + ": ", "/60 sentences (", " sentences/s, elapsed ", ", ETA ", "translating " + in + ": 60/60 sentences (100%), ", " took "}},
		{"translate greedy from standard input", in, []string{"translate", "-m", ckpt, "--beam", "1"},
			[]string{"translating standard input: ", "/60 sentences (", ", ETA ", ": 60/60 sentences (100%), "}},
		{"eval --model", "", []string{"eval", "-m", ckpt, "--src", in, "--ref", ref, "--batch", "8"},
			[]string{"translating " + in + ": ", "/60 sentences (", ", ETA ", ": 60/60 sentences (100%), "}},
		{"lexicon", "", []string{"lexicon", "-m", ckpt, "--src", src, "--tgt", tgt, "--out", filepath.Join(dir, "lex.ckpt")},
			[]string{"learning the lexicon (IBM Model 1): 1/5 iterations (20%), ", ", ETA ", ": 5/5 iterations (100%), "}},
		{"bpe learn", "", []string{"bpe", "learn", "--merges", "40", "-i", src, "-i", tgt},
			[]string{"learning merges: ", "/40 merges (", ", ETA ", "learning merges: 40/40 merges (100%), "}},
		{"align by a model", "", []string{"align", "-m", ckpt, "--src", in, "--tgt", ref, "--batch", "8"},
			[]string{"aligning " + in + " and " + ref + ": ", "/60 sentence pairs (", ", ETA ", ": 60/60 sentence pairs (100%), "}},
		{"align --statistical", "", []string{"align", "--statistical", "--src", src, "--tgt", tgt},
			[]string{"forward EM 1/4: ", "reverse aligning: ", "/300 sentence pairs (100%), "}},
		{"heatmap gallery", "", []string{"heatmap", "-m", ckpt, "--input", in, "--out-dir", filepath.Join(dir, "gallery"), "--limit", "20", "--batch", "4"},
			[]string{"translating " + in + ": ", "/20 sentences (", ", ETA ", "drawing " + filepath.Join(dir, "gallery", "*.png") + ": ", "/20 pictures (", ": 20/20 pictures (100%), "}},
		{"average", "", []string{"average", "-o", filepath.Join(dir, "avg.ckpt"), ckpt, ckpt, ckpt},
			[]string{"averaging: 1/3 checkpoints (33%), ", ", ETA ", "averaging: 3/3 checkpoints (100%), "}},
	} {
		t.Run(c.name, func(t *testing.T) {
			stdout, stderr := runWithStdin(t, c.stdin, append(c.args, "--progress-every", "1ns")...)
			for _, want := range c.want {
				if !strings.Contains(stderr, want) {
					t.Errorf("standard error lacks %q:\n%s", want, stderr)
				}
			}
			if strings.Contains(stderr, "\r") {
				t.Errorf("a carriage return (a progress bar's frame) off a terminal:\n%q", stderr)
			}
			quietOut, quietErr := runWithStdin(t, c.stdin, append(c.args, "--quiet")...)
			if strings.Contains(quietErr, "ETA") || strings.Contains(quietErr, "took") {
				t.Errorf("--quiet still shows progress:\n%s", quietErr)
			}
			// lexicon says how long it took on standard output.
			took := regexp.MustCompile(` in [0-9.]+s;`)
			if took.ReplaceAllString(stdout, "") != took.ReplaceAllString(quietOut, "") {
				t.Errorf("standard output differs with progress shown:\n%s\nand with --quiet:\n%s", stdout, quietOut)
			}
		})
	}
}

// runWithStdin runs the binary with the file at stdin (none when "") as its standard input, and fails the test
// when it fails; it returns standard output and standard error.
func runWithStdin(t *testing.T, stdin string, args ...string) (stdout, stderr string) {
	t.Helper()
	cmd := exec.Command(attendBin, args...)
	if stdin != "" {
		f, err := os.Open(stdin)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		cmd.Stdin = f
	}
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	if err := cmd.Run(); err != nil {
		t.Fatalf("attend %s: %v\n%s", strings.Join(args, " "), err, e.String())
	}
	return o.String(), e.String()
}
