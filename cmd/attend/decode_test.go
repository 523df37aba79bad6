package main

import (
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/attend-nmt/attend/kernels"
	"github.com/spf13/cobra"
)

// TestTranslateSearchFlags runs translate through the binary with the search flags: greedy (--beam 1) and a
// beam of 1 with scores give the same translations, beam 5 writes what its n-best list ranks first, and bad
// settings fail with the flag's name.
func TestTranslateSearchFlags(t *testing.T) {
	ckpt, dir, _ := trainTiny(t)
	input := filepath.Join(dir, "test.src")
	translate := func(args ...string) string {
		t.Helper()
		stdout, stderr, code := run(t, "", append([]string{"translate", "--model", ckpt, "--input", input, "--tokenized"}, args...)...)
		if code != 0 {
			t.Fatalf("translate %v exited %d: %s", args, code, stderr)
		}
		return stdout
	}
	firstOfNBest := func(nbest string) string {
		var out []string
		seen := map[string]bool{}
		for _, line := range strings.Split(strings.TrimSuffix(nbest, "\n"), "\n") {
			fields := strings.Split(line, " ||| ")
			if len(fields) != 4 {
				t.Fatalf("n-best line %q", line)
			}
			if !seen[fields[0]] {
				seen[fields[0]] = true
				out = append(out, fields[1])
			}
		}
		return strings.Join(out, "\n") + "\n"
	}
	greedy := translate("--beam", "1")
	if got := firstOfNBest(translate("--beam", "1", "--n-best", "1")); got != greedy {
		t.Fatalf("beam 1 with scores:\n%s\ngreedy:\n%s", got, greedy)
	}
	beam5 := translate()
	if got := firstOfNBest(translate("--n-best", "5")); got != beam5 {
		t.Fatalf("first of the n-best lists:\n%s\nbeam 5:\n%s", got, beam5)
	}
	// --threads changes how many cores decode, not what they write; more threads than CPUs are cut with a note.
	for _, threads := range []string{"1", "4096"} {
		stdout, stderr, code := run(t, "", "translate", "--model", ckpt, "--input", input, "--tokenized", "--threads", threads)
		if code != 0 || stdout != beam5 {
			t.Fatalf("translate --threads %s exited %d (%s), wrote\n%s\nwant what it writes on every core:\n%s", threads, code, stderr, stdout, beam5)
		}
		if note := strings.Contains(stderr, "note: --threads 4096 is more than the"); note != (threads == "4096") {
			t.Fatalf("translate --threads %s: stderr %q", threads, stderr)
		}
	}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--beam", "0"}, "--beam is 0"},
		{[]string{"--beam", "2", "--n-best", "3"}, "--n-best is 3"},
		{[]string{"--max-len-ratio", "-1"}, "--max-len-ratio is -1"},
		{[]string{"--alpha", "-1"}, "--alpha is -1"},
		{[]string{"--threads", "-1"}, "--threads is -1; want 0 (every core) or more"},
	} {
		_, stderr, code := run(t, "", append([]string{"translate", "--model", ckpt, "--input", input}, tt.args...)...)
		if code != 1 || !strings.Contains(stderr, tt.want) {
			t.Fatalf("translate %v: exit %d, stderr %q; want 1 and %q", tt.args, code, stderr, tt.want)
		}
	}
}

// TestBPELearnApplyUndo learns merges through the binary, splits a file and joins it back: the words come back
// as the tokenizer gives them.
func TestBPELearnApplyUndo(t *testing.T) {
	dir := t.TempDir()
	text := "the lowest newest widest lower\nnewer wider lowest\nthe newest\n"
	in, codes := filepath.Join(dir, "in.txt"), filepath.Join(dir, "codes.bpe")
	writeFile(t, in, text)
	if _, stderr, code := run(t, "", "bpe", "learn", "--merges", "20", "--input", in, "--output", codes); code != 0 {
		t.Fatalf("bpe learn exited %d: %s", code, stderr)
	}
	split, stderr, code := run(t, text, "bpe", "apply", "--codes", codes)
	if code != 0 || !strings.Contains(split, "@@ ") {
		t.Fatalf("bpe apply exited %d (%s), wrote %q: want split words", code, stderr, split)
	}
	joined, stderr, code := run(t, split, "bpe", "undo")
	if code != 0 || joined != text {
		t.Fatalf("bpe undo exited %d (%s): %q, want %q", code, stderr, joined, text)
	}
	writeFile(t, codes, "#version: 0.2\na b c\n")
	if _, stderr, code := run(t, text, "bpe", "apply", "--codes", codes); code != 1 || !strings.Contains(stderr, "codes.bpe line 2") {
		t.Fatalf("bad codes: exit %d, stderr %q", code, stderr)
	}
}

// TestTranslateAlphaFromCheckpoint trains with decode.alpha set: translate ranks with it by default (the n-best
// scores equal those of --alpha with the same value, and differ from --alpha 0), and --alpha overrides it.
func TestTranslateAlphaFromCheckpoint(t *testing.T) {
	ckpt, dir, _ := trainTiny(t, "--set", "decode.alpha=2")
	input := filepath.Join(dir, "test.src")
	nbest := func(args ...string) string {
		t.Helper()
		stdout, stderr, code := run(t, "", append([]string{"translate", "--model", ckpt, "--input", input, "--tokenized", "--n-best", "3"}, args...)...)
		if code != 0 {
			t.Fatalf("translate %v exited %d: %s", args, code, stderr)
		}
		return stdout
	}
	byDefault, alpha2, alpha0 := nbest(), nbest("--alpha", "2"), nbest("--alpha", "0")
	if byDefault != alpha2 {
		t.Fatalf("a checkpoint trained with decode.alpha=2, no --alpha:\n%s\nwith --alpha 2:\n%s", byDefault, alpha2)
	}
	if byDefault == alpha0 {
		t.Fatalf("--alpha 0 did not override the checkpoint's decode.alpha=2: both gave\n%s", alpha0)
	}
	if _, stderr, code := run(t, "", "train", "--config", "../../configs/demo.yaml", "--src", input, "--tgt", input,
		"--out", filepath.Join(dir, "bad.ckpt"), "--set", "decode.alpha=-1"); code != 1 || !strings.Contains(stderr, "decode.alpha is -1") {
		t.Fatalf("train with decode.alpha=-1: exit %d, stderr %q; want 1 and the key named", code, stderr)
	}
}

// TestPrecisionFlag reads --precision, and the deprecated --bf16 as it: --bf16=false is --precision float32
// unless --precision is given too, and --bf16 alone changes nothing.
func TestPrecisionFlag(t *testing.T) {
	for _, c := range []struct {
		args []string
		want kernels.Precision
	}{
		{nil, kernels.PrecisionAuto},
		{[]string{"--precision", "bf16x3"}, kernels.PrecisionBF16x3},
		{[]string{"--bf16=false"}, kernels.PrecisionFloat32},
		{[]string{"--bf16"}, kernels.PrecisionAuto},
		{[]string{"--bf16=false", "--precision", "bf16"}, kernels.PrecisionBF16},
	} {
		var d decodeFlags
		cmd := &cobra.Command{Use: "translate"}
		cmd.SetErr(io.Discard)
		d.register(cmd.Flags())
		if err := cmd.ParseFlags(c.args); err != nil {
			t.Fatal(err)
		}
		if got := d.given(cmd).Precision; got != c.want {
			t.Errorf("%v: precision %q, want %q", c.args, got, c.want)
		}
	}
}
