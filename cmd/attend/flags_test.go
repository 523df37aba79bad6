package main

import (
	"strings"
	"testing"
)

// TestShortFlags: the short flags Marian and OpenNMT-py users reach for name the same things on every command
// that has them: -m the model, -i the input, -o the output file, -c train's config.
func TestShortFlags(t *testing.T) {
	root := newRootCmd()
	for _, tt := range []struct {
		cmd   []string
		short map[string]string
	}{
		{[]string{"translate"}, map[string]string{"m": "model", "i": "input", "o": "output"}},
		{[]string{"eval"}, map[string]string{"m": "model", "o": "output"}},
		{[]string{"heatmap"}, map[string]string{"m": "model", "i": "input", "o": "out"}},
		{[]string{"align"}, map[string]string{"m": "model", "o": "output"}},
		{[]string{"lexicon"}, map[string]string{"m": "model", "o": "out"}},
		{[]string{"train"}, map[string]string{"c": "config", "o": "out"}},
		{[]string{"average"}, map[string]string{"o": "out"}},
		{[]string{"plot"}, map[string]string{"o": "out"}},
		{[]string{"bpe", "learn"}, map[string]string{"i": "input", "o": "output"}},
	} {
		cmd, _, err := root.Find(tt.cmd)
		if err != nil {
			t.Fatal(err)
		}
		for short, long := range tt.short {
			if f := cmd.Flags().ShorthandLookup(short); f == nil || f.Name != long {
				t.Errorf("%s -%s is %v, want --%s", strings.Join(tt.cmd, " "), short, f, long)
			}
		}
	}
}

// TestSingleDashLongFlagsAreRefused: "-model m.ckpt", as OpenNMT-py spells it, would read as -m "odel"; it is
// refused with the right spelling instead.
func TestSingleDashLongFlagsAreRefused(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string // "" for no error
	}{
		{[]string{"translate", "-model", "m.ckpt"}, "-model: attend's long flags take two dashes: --model (or -m, its short form)"},
		{[]string{"translate", "-output=x.txt"}, "--output"},
		{[]string{"eval", "-src", "a"}, "-src: attend's long flags take two dashes: --src"},
		{[]string{"translate", "-max_len", "5"}, "--max-len"},
		{[]string{"translate", "-quiet"}, "-quiet: attend's long flags take two dashes: --quiet (or -q, its short form)"},
		{[]string{"translate", "-m", "m.ckpt", "-i", "in.txt"}, ""},
		{[]string{"heatmap", "--text", "-1"}, ""},
		{[]string{"translate", "--", "-model"}, ""},
		{[]string{"nosuchcommand", "-model"}, ""},
	} {
		err := checkSingleDash(newRootCmd(), tt.args)
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%q: %v", tt.args, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%q: error %v, want one with %q", tt.args, err, tt.want)
		}
	}
	if _, stderr, code := run(t, "", "translate", "-model", "m.ckpt"); code != 1 || !strings.Contains(stderr, "--model") {
		t.Errorf("translate -model: exit %d, stderr %q", code, stderr)
	}
}
