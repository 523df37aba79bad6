package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestAverageTheLastKeptCheckpoints trains with train.keep_last, averages the kept checkpoints through the
// CLI, and translates with the result; bad requests are refused before anything is written.
func TestAverageTheLastKeptCheckpoints(t *testing.T) {
	ckpt, dir, _ := trainTiny(t, "--set", "train.save_every=2", "--set", "train.keep_last=3")
	for _, step := range []string{"4", "6", "8"} {
		if _, err := os.Stat(filepath.Join(dir, "m.step-"+step+".ckpt")); err != nil {
			t.Fatalf("keep_last 3 of 8 steps saved every 2: %v", err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "m.step-2.ckpt")); err == nil {
		t.Fatal("m.step-2.ckpt kept beyond keep_last 3")
	}
	avg := filepath.Join(dir, "avg.ckpt")
	stdout, stderr, code := run(t, "", "average", "--out", avg, "--last", "3", "--of", ckpt)
	if code != 0 || !strings.Contains(stdout, "averaged 3 checkpoints") {
		t.Fatalf("average exited %d:\n%s%s", code, stdout, stderr)
	}
	stdout, stderr, code = run(t, "", "translate", "--model", avg, "--input", filepath.Join(dir, "test.src"))
	if code != 0 || strings.Count(stdout, "\n") != 5 {
		t.Fatalf("translate with the average exited %d, %d lines:\n%s", code, strings.Count(stdout, "\n"), stderr)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--out", avg, "--last", "4", "--of", ckpt}, "only 3 step checkpoints"},
		{[]string{"--out", ckpt, ckpt, avg}, "--out " + ckpt + " is also an input"},
		{[]string{"--out", filepath.Join(dir, "x.ckpt"), ckpt}, "at least two checkpoints"},
		{[]string{"--out", filepath.Join(dir, "x.ckpt"), ckpt, filepath.Join(dir, "train.src")}, "train.src"},
	} {
		_, stderr, code := run(t, "", append([]string{"average"}, c.args...)...)
		if code != 1 || !strings.Contains(stderr, c.want) {
			t.Errorf("average %v: exit %d, stderr %q; want 1 and %q", c.args, code, stderr, c.want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "x.ckpt")); err == nil {
		t.Error("a refused average wrote its output")
	}
}
