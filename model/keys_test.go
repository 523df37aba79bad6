package model

import (
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/attend-nmt/attend/internal/bound"
)

// TestKeysListEveryKeyTheLoaderAccepts: Keys names each field of Config, in order, and each default it states
// reads back through --set and through a YAML file to the value Default has.
func TestKeysListEveryKeyTheLoaderAccepts(t *testing.T) {
	keys := Keys()
	var names []string
	for _, k := range keys {
		names = append(names, k.Name)
		cfg := Default()
		if err := cfg.Set(k.Name + "=" + strings.Trim(k.Default, `"`)); err != nil {
			t.Errorf("%s: --set with its stated default %q: %v", k.Name, k.Default, err)
		} else if cfg != Default() {
			t.Errorf("%s: the stated default %q is not Default()'s value: %v", k.Name, k.Default, Diff(Default(), cfg))
		}
		_, name, _ := strings.Cut(k.Name, ".")
		if cfg, _, err := parseConfig([]byte(k.Section + ":\n  " + name + ": " + k.Default + "\n")); err != nil || cfg != Default() {
			t.Errorf("%s: a YAML file with its stated default %s: %v, %v", k.Name, k.Default, err, Diff(Default(), cfg))
		}
	}
	if got, want := strings.Join(names, " "), strings.Join(configKeys(), " "); got != want {
		t.Fatalf("Keys() names\n%s\nthe config has\n%s", got, want)
	}
}

// TestEveryKeyHasARule: a number or string key without a range (or list of values) would be accepted whatever
// it is and documented as such; only the seed takes any value of its type.
func TestEveryKeyHasARule(t *testing.T) {
	for _, k := range Keys() {
		needs := k.Type == "integer" || k.Type == "number" || k.Type == "string"
		if needs && k.Accepts == "" {
			t.Errorf("%s (%s) has no rule in keyRules", k.Name, k.Type)
		}
		if !needs && k.Accepts != "" {
			t.Errorf("%s (%s) has a rule, %q", k.Name, k.Type, k.Accepts)
		}
	}
	seen := map[string]bool{}
	for _, r := range keyRules() {
		if _, ok := keyValue(reflect.ValueOf(Small()), r.key); !ok {
			t.Errorf("rule for %s, which is no config key", r.key)
		}
		if seen[r.key] {
			t.Errorf("two rules for %s", r.key)
		}
		seen[r.key] = true
	}
}

// TestRulesAreWhatValidateEnforces sets each key to the edges of the range its rule states, through --set:
// Validate accepts the values inside and names the key for the values outside, also for the rules whose check
// lives in the package that reads the key (model.cell, model.attention, model.window, model.heads,
// model.temperature). So the reference, which prints the rules, says what Validate does.
func TestRulesAreWhatValidateEnforces(t *testing.T) {
	// A base on which the checks that tie keys together stay quiet, whatever the edge tried.
	base := Small()
	base.Data.RoundLen, base.Data.MaxLen, base.Train.ValidBLEU = 1, maxLength, 10
	// Settings that another key needs in company: subword bpe wants merges, the last alignment head as many heads.
	companions := map[string][]string{"data.subword=bpe": {"data.merges=8000"},
		"model.alignment_head=65536": {"model.heads=65536", "model.d_model=65536"}}
	try := func(r keyRule, value string, ok bool) {
		t.Helper()
		cfg := base
		if r.when != "" {
			if err := cfg.Set(r.when); err != nil {
				t.Fatal(err)
			}
		}
		if r.when == "model.type="+TypeTransformer { // one head divides every width; every block may be the attention layer
			cfg.Model.Heads, cfg.Model.Layers = 1, maxLayers
		}
		for _, set := range append([]string{r.key + "=" + value}, companions[r.key+"="+value]...) {
			if err := cfg.Set(set); err != nil {
				t.Fatal(err)
			}
		}
		err := cfg.Validate()
		switch {
		case ok && err != nil:
			t.Errorf("%s=%s (rule %q): %v, want it accepted", r.key, value, r, err)
		case !ok && (err == nil || !strings.Contains(err.Error(), r.key)):
			t.Errorf("%s=%s (rule %q): %v, want an error naming %s", r.key, value, r, err, r.key)
		}
	}
	for _, r := range keyRules() {
		if r.path { // any file name, and "" for none
			try(r, "some/file.txt", true)
			try(r, `""`, true)
			continue
		}
		if r.values != nil {
			for _, v := range r.values {
				try(r, v, true)
			}
			try(r, "no-such-"+r.values[0], false)
			if r.blank {
				try(r, "", true)
			}
			continue
		}
		step := 0.5
		if r.isInt() {
			step = 1
		}
		try(r, bound.Num(r.Min+step), true)
		try(r, bound.Num(r.Min), !r.Above)
		try(r, bound.Num(r.Min-step), r.Zero && r.Min-step == 0)
		if r.Zero {
			try(r, "0", true)
		}
		if math.IsInf(r.Max, 1) {
			if !r.elsewhere { // model.heads must also divide the widths it splits
				try(r, bound.Num(r.Min+1e6), true)
			}
			if !r.isInt() {
				try(r, "+Inf", false)
				try(r, "NaN", false)
			}
		} else {
			try(r, bound.Num(r.Max), !r.Below)
			try(r, bound.Num(r.Max+step), false)
		}
	}
}

// TestRuleText pins the wording of each kind of range, which both the reference and the error messages use.
func TestRuleText(t *testing.T) {
	rules := map[string]keyRule{}
	for _, r := range keyRules() {
		rules[r.key] = r
	}
	for key, want := range map[string]string{
		"model.emb":         "between 1 and " + strconv.Itoa(maxWidth),
		"train.epochs":      "at least 1",
		"train.lr":          "above 0 and at most 10",
		"model.dropout":     "at least 0 and below 1",
		"decode.alpha":      "at least 0 and at most 10",
		"data.max_vocab":    "0 or at least 5",
		"data.merges":       "between 1 and 1048576 (with data.subword bpe; else also 0)",
		"model.temperature": "a finite number, above 0 (with model.attention hard; else also 0)",
		"data.subword":      "none, bpe",
	} {
		if got := rules[key].String(); got != want {
			t.Errorf("%s: %q, want %q", key, got, want)
		}
	}
}

// TestEveryNumberKeyMustBeFinite sets each number key, through --set and through a YAML file, to NaN and ±Inf:
// Validate names the key whether or not the model reads it (model.temperature, under additive attention, is
// read by nobody, and a NaN there used to train until the first save failed to write it).
func TestEveryNumberKeyMustBeFinite(t *testing.T) {
	n := 0
	for _, k := range Keys() {
		if k.Type != "number" {
			continue
		}
		n++
		for _, v := range []string{"NaN", "+Inf", "-Inf"} {
			cfg := Small()
			if err := cfg.Set(k.Name + "=" + v); err != nil {
				t.Fatal(err)
			}
			if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), k.Name+" is") {
				t.Errorf("--set %s=%s: Validate says %v, want an error naming %s", k.Name, v, err, k.Name)
			}
			_, name, _ := strings.Cut(k.Name, ".")
			if _, _, err := parseConfig([]byte(k.Section + ":\n  " + name + ": " + v + "\n")); err == nil || !strings.Contains(err.Error(), k.Name) {
				t.Errorf("YAML %s: %s: %v, want an error naming %s", k.Name, v, err, k.Name)
			}
		}
	}
	if n < 8 {
		t.Fatalf("only %d number keys", n)
	}
}

// TestUnreadKeysKeepTheirRange: a number key that only some setting reads (model.window, local attention's;
// model.temperature, hard attention's; model.d_model, a Transformer's...) is still held to its range, or 0,
// when the setting is otherwise: -1, or a value past the range, is refused naming the key, whichever attention
// or architecture is chosen; 0 (what checkpoints from before the key hold) and the default are accepted.
func TestUnreadKeysKeepTheirRange(t *testing.T) {
	n := 0
	for _, r := range keyRules() {
		if r.when == "" || r.values != nil || r.path {
			continue
		}
		n++
		key, want, _ := strings.Cut(r.when, "=")
		base := Small()
		if v, _ := keyValue(reflect.ValueOf(base), key); fmt.Sprint(v.Interface()) == want {
			t.Fatalf("%s: Small has %s, which reads it", r.key, r.when)
		}
		values := map[string]bool{"-1": false, "0": true}
		if !math.IsInf(r.Max, 1) {
			values[bound.Num(r.Max+1)] = false
		}
		for v, ok := range values {
			cfg := base
			if err := cfg.Set(r.key + "=" + v); err != nil {
				t.Fatal(err)
			}
			err := cfg.Validate()
			if ok && err != nil || !ok && (err == nil || !strings.Contains(err.Error(), r.key+" is "+v)) {
				t.Errorf("%s=%s without %s: %v; want accepted %v", r.key, v, r.when, err, ok)
			}
		}
	}
	if n < 8 {
		t.Fatalf("only %d conditional number rules", n)
	}
}
