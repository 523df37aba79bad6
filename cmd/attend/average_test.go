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
		{[]string{"--out", avg, "--last", "4", "--of", ckpt}, "only 3 step checkpoints beside " + ckpt + ": its run keeps only the newest 3 (train.keep_last 3); average those with --last 3"},
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

// TestAverageSaysWhyStepCheckpointsAreMissing: too few step checkpoints for --last N has three causes, and the
// message names the one that holds: train.keep_last unset, or set high enough but the run has saved fewer times.
func TestAverageSaysWhyStepCheckpointsAreMissing(t *testing.T) {
	none, _, _ := trainTiny(t)
	some, _, _ := trainTiny(t, "--set", "train.save_every=2", "--set", "train.keep_last=5") // saves at steps 2, 4, 6, 8
	for _, c := range []struct {
		ckpt, last, want string
	}{
		{none, "2", "--last 2: 0 step checkpoints beside " + none + ": its run kept none (train.keep_last is 0); train with --set train.keep_last=2"},
		{some, "5", "--last 5: only 4 step checkpoints beside " + some + ": its run keeps 5 (train.keep_last), saving one every 2 steps (train.save_every) and one at each epoch's end, and is at step 8; average those with --last 4, or train longer"},
	} {
		_, stderr, code := run(t, "", "average", "--out", filepath.Join(t.TempDir(), "a.ckpt"), "--last", c.last, "--of", c.ckpt)
		if code != 1 || !strings.Contains(stderr, c.want) {
			t.Errorf("average --last %s: exit %d, stderr %q; want 1 and %q", c.last, code, stderr, c.want)
		}
	}
}
