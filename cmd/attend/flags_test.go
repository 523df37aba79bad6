package main

import (
	"strconv"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
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

// TestEveryNumberFlagIsChecked walks every command's flags. Every float flag is a floatFlag, with a range, and
// refuses NaN, ±Inf, 1e308 (there is no float flag without an upper bound: each enters a product), 1e400 (which
// parses as +Inf) and text that is no number, and -1 where its range does not hold it, with a message naming
// the flag, as the command line is parsed. Every int flag is an intFlag (refusing a negative number where its
// range does, and any integer past int64) or is one of intsCheckedElsewhere, whose command checks it. So a flag
// added later is checked too, or this test fails.
func TestEveryNumberFlagIsChecked(t *testing.T) {
	// The int flags that stand for a config key (Validate checks them with the key's name) or that their
	// command's options check with messages of their own.
	intsCheckedElsewhere := map[string]bool{
		"train --epochs": true, "train --max-steps": true, "train --batch": true, "train --threads": true, // config keys
		"translate --threads": true, "eval --threads": true, "heatmap --threads": true, "serve --threads": true, "align --threads": true, "demo --threads": true, // cut to the CPUs, with a note
		"align --batch": true, "align --layer": true, "align --iterations": true, "align --max-len": true, // app.AlignOptions
		"average --last": true, "bpe learn --merges": true, "heatmap --limit": true, "eval --resamples": true, "eval --trials": true,
		"serve --max-sentences": true, "serve --max-source-len": true, "serve --queue": true, "serve --max-body": true, // serve.RunOptions
	}
	var floats, ints int
	var walk func(cmd *cobra.Command)
	walk = func(cmd *cobra.Command) {
		path := strings.TrimPrefix(cmd.CommandPath(), "attend ")
		cmd.LocalFlags().VisitAll(func(f *pflag.Flag) {
			name := path + " --" + f.Name
			switch typ := f.Value.Type(); {
			case strings.HasPrefix(typ, "float"):
				floats++
				ff, ok := f.Value.(*floatFlag)
				if !ok {
					t.Errorf("%s is a %s flag outside floatFlag: register it with floatVar and its range", name, typ)
					return
				}
				for _, v := range []string{"NaN", "+Inf", "-Inf", "1e308", "-1", "1e400", "x", "0.5"} {
					x, _ := strconv.ParseFloat(v, 64)
					refuse := !ff.r.Contains(x) || v == "x"
					checkFlag(t, path, f.Name, v, refuse)
				}
			case strings.HasPrefix(typ, "int"):
				ints++
				fi, ok := f.Value.(*intFlag)
				if !ok {
					if !intsCheckedElsewhere[name] {
						t.Errorf("%s is an %s flag outside intFlag: register it with intVar and its range", name, typ)
					}
					return
				}
				for _, v := range []string{"-1", "99999999999999999999", "1.5", "1"} {
					n, _ := strconv.Atoi(v)
					refuse := !fi.r.Contains(float64(n)) || v == "1.5" || len(v) > 18
					checkFlag(t, path, f.Name, v, refuse)
				}
			}
		})
		for _, c := range cmd.Commands() {
			walk(c)
		}
	}
	walk(newRootCmd())
	if floats < 6 || ints < 10 {
		t.Fatalf("walked %d float flags and %d int flags: the walk missed commands", floats, ints)
	}
}

// checkFlag parses "--name value" on command path of a new root, as cobra does (its FlagErrorFunc included),
// and checks that the value is refused, naming the flag, or accepted, as refuse says.
func checkFlag(t *testing.T, path, name, value string, refuse bool) {
	t.Helper()
	root := newRootCmd()
	cmd, _, err := root.Find(strings.Fields(path))
	if err != nil {
		t.Fatal(err)
	}
	err = cmd.ParseFlags([]string{"--" + name + "=" + value})
	if err != nil {
		err = cmd.FlagErrorFunc()(cmd, err)
	}
	switch {
	case refuse && (err == nil || !strings.HasPrefix(err.Error(), "--"+name+" ")):
		t.Errorf("%s --%s %s: %v; want a refusal that begins with the flag's name", path, name, value, err)
	case !refuse && err != nil:
		t.Errorf("%s --%s %s: %v; want it accepted", path, name, value, err)
	}
}
