package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/attend-nmt/attend/synth"
)

// TestAlignStatistical aligns a synthetic corpus without a model, from two files and from one " ||| " file,
// scores it against the generator's gold, and refuses options that belong to the other mode.
func TestAlignStatistical(t *testing.T) {
	dir := t.TempDir()
	train, valid, test := synth.Split(1000, 5, 5, 11)
	if err := synth.WriteFiles(dir, train, valid, test); err != nil {
		t.Fatal(err)
	}
	var joined strings.Builder
	for _, p := range train {
		joined.WriteString(p.Src + " ||| " + p.Tgt + "\n")
	}
	bars := filepath.Join(dir, "train.src-tgt")
	writeFile(t, bars, joined.String())
	src, tgt, gold := filepath.Join(dir, "train.src"), filepath.Join(dir, "train.tgt"), filepath.Join(dir, "train.align")

	out := filepath.Join(dir, "out.align")
	stdout, stderr, code := run(t, "", "align", "--statistical", "--src", src, "--tgt", tgt, "--gold", gold, "--output", out)
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	m := regexp.MustCompile(`AER (\d\.\d{4})  \(1000 sentence pairs`).FindStringSubmatch(stdout)
	if m == nil {
		t.Fatalf("align printed %q, want the AER over 1000 pairs", stdout)
	}
	if aer, _ := strconv.ParseFloat(m[1], 64); aer > 0.05 {
		t.Errorf("grow-diag-final-and AER %.4f on the synthetic corpus, want at most 0.05", aer)
	}
	// One line per EM iteration and direction on standard error, as fast_align prints them: fast_align's model's
	// 4, then the HMM's 5.
	if n := strings.Count(stderr, "log-likelihood per word"); n != 18 || !strings.Contains(stderr, "reverse EM 4/4") ||
		!strings.Contains(stderr, "reverse HMM EM 5/5") {
		t.Errorf("%d iteration lines on standard error, want 18:\n%s", n, stderr)
	}
	written, _ := os.ReadFile(out)
	if lines := strings.Count(string(written), "\n"); lines != len(train) {
		t.Errorf("%d alignment lines for %d pairs", lines, len(train))
	}
	// The same pairs from one file, to standard output.
	again, stderr, code := run(t, "", "align", "--statistical", "--data", bars, "--tokenized", "--threads", "1")
	if code != 0 || again != string(written) {
		t.Errorf("--data %s: exit %d, the same links %v\n%s", bars, code, again == string(written), stderr)
	}
	forward, _, code := run(t, "", "align", "--statistical", "--data", bars, "--sym", "forward", "--iterations", "2", "--no-progress")
	if code != 0 || strings.Count(forward, "\n") != len(train) || forward == again {
		t.Errorf("--sym forward: exit %d, %d lines", code, strings.Count(forward, "\n"))
	}
	fastAlign, stderr, code := run(t, "", "align", "--statistical", "--data", bars, "--statistical-model", "fast_align")
	if n := strings.Count(stderr, "log-likelihood per word"); code != 0 || n != 8 || strings.Count(fastAlign, "\n") != len(train) || fastAlign == again {
		t.Errorf("--statistical-model fast_align: exit %d, %d iteration lines, want 8\n%s", code, n, stderr)
	}

	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"no aligner", []string{"--src", src, "--tgt", tgt}, "give --model CKPT to align by a model's attention, --statistical to align without one, or --train DIR"},
		{"both aligners", []string{"--statistical", "--model", "m.ckpt", "--src", src, "--tgt", tgt}, "one of --model, --statistical and --train, not several"},
		{"--train and a model", []string{"--train", dir, "--model", "m.ckpt", "--data", bars}, "one of --model, --statistical and --train, not several"},
		{"--epochs without --train", []string{"--statistical", "--data", bars, "--epochs", "2"}, "--epochs is an option of --train"},
		{"--train and --reverse", []string{"--train", dir, "--data", bars, "--reverse", "m.ckpt"}, "--reverse is an option of alignment by a model (--model), not of --train"},
		{"--train and a statistical option", []string{"--train", dir, "--data", bars, "--keep-case"}, "--keep-case is an option of --statistical"},
		{"no corpus", []string{"--statistical"}, "--src FILE --tgt FILE, or --data FILE"},
		{"model option", []string{"--statistical", "--data", bars, "--threshold", "0.3"}, "--threshold is an option of alignment by a model"},
		{"statistical option", []string{"--model", "m.ckpt", "--data", bars, "--iterations", "3"}, "--iterations is an option of --statistical"},
		{"unknown symmetrization", []string{"--statistical", "--data", bars, "--sym", "grow"}, `unknown symmetrization "grow"`},
		{"unknown model", []string{"--statistical", "--data", bars, "--statistical-model", "giza"}, `--statistical-model: wordalign: unknown model "giza"`},
		{"statistical model without --statistical", []string{"--model", "m.ckpt", "--data", bars, "--statistical-model", "hmm"}, "--statistical-model is an option of --statistical"},
		{"bad iterations", []string{"--statistical", "--data", bars, "--iterations", "0"}, "--iterations is 0"},
		{"a line without a separator", []string{"--statistical", "--data", src}, "train.src line 1: want source<TAB>target or source ||| target"},
	} {
		_, stderr, code := run(t, "", append([]string{"align"}, c.args...)...)
		if code != 1 || !strings.Contains(stderr, c.want) {
			t.Errorf("%s: exit %d, stderr %q, want one containing %q", c.name, code, stderr, c.want)
		}
	}
}
