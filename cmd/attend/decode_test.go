package main

import (
	"path/filepath"
	"strings"
	"testing"
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
			if len(fields) != 3 {
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
	if got, want := firstOfNBest(translate("--n-best", "5")), translate(); got != want {
		t.Fatalf("first of the n-best lists:\n%s\nbeam 5:\n%s", got, want)
	}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--beam", "0"}, "--beam is 0"},
		{[]string{"--beam", "2", "--n-best", "3"}, "--n-best is 3"},
		{[]string{"--max-len-ratio", "-1"}, "max length ratio -1"},
		{[]string{"--alpha", "-1"}, "alpha -1"},
	} {
		_, stderr, code := run(t, "", append([]string{"translate", "--model", ckpt, "--input", input}, tt.args...)...)
		if code != 1 || !strings.Contains(stderr, tt.want) {
			t.Fatalf("translate %v: exit %d, stderr %q; want 1 and %q", tt.args, code, stderr, tt.want)
		}
	}
}
