package model

import (
	"github.com/attend-nmt/attend/align"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPresetFilesMatchTheirFunctions keeps configs/default.yaml and DefaultPreset, configs/small.yaml and Small in
// step, and base.yaml at Small's widths doubled.
func TestPresetFilesMatchTheirFunctions(t *testing.T) {
	for _, c := range []struct {
		file string
		want Config
	}{{"default.yaml", DefaultPreset()}, {"small.yaml", Small()}} {
		got, _, err := LoadConfig("../configs/" + c.file)
		if err != nil {
			t.Fatal(err)
		}
		if got != c.want {
			t.Fatalf("configs/%s:\n%s\nwant:\n%s", c.file, got.YAML(), c.want.YAML())
		}
	}
	if d := DefaultPreset(); d.Data.Lowercase || d.Data.Subword != SubwordBPE || d.Data.Merges == 0 {
		t.Fatalf("the default config trains lowercase %v, subword %q, %d merges; want cased BPE", d.Data.Lowercase, d.Data.Subword, d.Data.Merges)
	}
	base, _, err := LoadConfig("../configs/base.yaml")
	if err != nil {
		t.Fatal(err)
	}
	want := Small()
	want.Model.Emb, want.Model.EncHidden, want.Model.DecHidden, want.Model.AttnDim = 256, 256, 512, 256
	if base != want {
		t.Fatalf("configs/base.yaml:\n%s\nwant:\n%s", base.YAML(), want.YAML())
	}
}

func TestSetOverridesOneKey(t *testing.T) {
	cfg := Default()
	for _, s := range []string{"model.cell=gru", "train.lr=5e-4", "data.batch=32", "data.lowercase=false", "model.attend_after_input=true"} {
		if err := cfg.Set(s); err != nil {
			t.Fatal(err)
		}
	}
	if cfg.Model.Cell != "gru" || cfg.Train.LR != 5e-4 || cfg.Data.Batch != 32 || cfg.Data.Lowercase || !cfg.Model.AttendAfterInput {
		t.Fatalf("overrides not applied: %+v", cfg)
	}
	if cfg.Model.Emb != 128 || cfg.Train.Epochs != 10 {
		t.Fatalf("other keys changed: %+v", cfg)
	}
}

func TestConfigErrorsNameTheProblem(t *testing.T) {
	cases := []struct{ set, want string }{
		{"model.cells=gru", "cells"},
		{"train.lr=fast", "lr"},
		{"nosection", "section.key=value"},
		{"data.batch=1.5", "batch"},
	}
	for _, c := range cases {
		cfg := Default()
		err := cfg.Set(c.set)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Set(%q) = %v, want an error mentioning %q", c.set, err, c.want)
		}
	}
	for _, c := range []struct {
		sets []string
		want string // "" for valid
	}{
		{[]string{"data.subword=bpe", "data.merges=8000"}, ""},
		{[]string{"data.subword=bpe"}, "config: data.merges is 0; want between 1 and 1048576"},
		{[]string{"data.subword=bpe", "data.merges=-5"}, "data.merges is -5; want between 1 and"},
		{[]string{"data.subword=bpe", "data.merges=2000000"}, "data.merges is 2000000; want between 1 and"},
		{[]string{"data.merges=8000"}, "data.merges is 8000 but data.subword is none"},
		{[]string{"data.subword=BPE", "data.merges=10"}, `data.subword is "BPE"; want none or bpe`},
		{[]string{"data.subword="}, ""},
		{[]string{"decode.alpha=1.5"}, ""},
		{[]string{"decode.alpha=-0.5"}, "config: decode.alpha is -0.5; want at least 0 and at most 10 (0: no length penalty)"},
		{[]string{"decode.alpha=+Inf"}, "decode.alpha is +Inf"},
		{[]string{"decode.alpha=1e308"}, "decode.alpha is 1e+308"},                                             // every length penalty +Inf, every score 0
		{[]string{"data.memory_mb=1e300"}, "data.memory_mb is 1e+300; want at least 0 and at most 1073741824"}, // its bytes overflowed an int64
	} {
		cfg := Small() // words: the subword cases below switch BPE on
		for _, set := range c.sets {
			if err := cfg.Set(set); err != nil {
				t.Fatal(err)
			}
		}
		err := cfg.Validate()
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%v: Validate() = %v, want %q", c.sets, err, c.want)
		}
	}
	path := filepath.Join(t.TempDir(), "bad.yaml")
	os.WriteFile(path, []byte("model:\n  emb: 64\n  hiden: 3\n"), 0o644)
	_, _, err := LoadConfig(path)
	if err == nil || !strings.Contains(err.Error(), "bad.yaml") || !strings.Contains(err.Error(), "line 3") {
		t.Fatalf("LoadConfig with an unknown key: %v, want file name and line 3", err)
	}
	cfg := Default()
	cfg.Model.Cell = "rnn"
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "rnn") {
		t.Fatalf("Validate with cell rnn: %v", err)
	}
	cfg = Default()
	cfg.Model.Attention = "bilinear"
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "model.attention") || !strings.Contains(err.Error(), "bilinear") {
		t.Fatalf("Validate with attention bilinear: %v", err)
	}
	for _, name := range append(align.Names(), "mlp") {
		cfg.Model.Attention = name
		if err := cfg.Validate(); err != nil {
			t.Errorf("Validate with attention %s: %v", name, err)
		}
	}
	for _, c := range []struct {
		metric    string
		validBLEU int
		want      string // "" when valid
	}{{"bleu", 0, "valid_bleu is 0"}, {"accuracy", 10, `"accuracy"`}, {"bleu", 10, ""}, {"ppl", 0, ""}, {"", 0, ""}} {
		cfg := Default()
		cfg.Train.BestMetric, cfg.Train.ValidBLEU = c.metric, c.validBLEU
		err := cfg.Validate()
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "train.best_metric")) {
			t.Errorf("best_metric %q with valid_bleu %d: %v, want %q", c.metric, c.validBLEU, err, c.want)
		}
	}
	cfg = Default()
	cfg.Model.SelfAttentionLayers, cfg.Model.Heads = 2, 3
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "model.heads is 3") || !strings.Contains(err.Error(), "256") {
		t.Fatalf("Validate with 3 heads over the memory width 256: %v, want an error naming both", err)
	}
	cfg.Model.Heads = 8
	if err := cfg.Validate(); err != nil {
		t.Fatalf("Validate with 8 heads over the memory width 256: %v", err)
	}
}

// TestConfigRefusesDuplicates gives a section or a key twice, in one section and in two copies of a section: the
// error names the key and both lines, where the last value used to win silently.
func TestConfigRefusesDuplicates(t *testing.T) {
	for _, c := range []struct {
		name, yaml string
		want       []string // "" when valid
	}{
		{"key twice", "model:\n  emb: 64\n  cell: gru\n  emb: 32\n", []string{"line 4", "model.emb is given twice", "lines 2 and 4"}},
		{"section twice", "model:\n  emb: 64\ntrain:\n  lr: 0.1\nmodel:\n  cell: gru\n", []string{"line 5", "section model is given twice", "lines 1 and 5"}},
		{"empty section twice", "train:\n\ntrain:\n  lr: 0.1\n", []string{"section train is given twice", "lines 1 and 3"}},
		{"flow mapping", "data: {batch: 8, batch: 16}\n", []string{"data.batch is given twice", "lines 1 and 1"}},
		{"same key in two sections", "model:\n  dropout: 0.1\ndata:\n  max_len: 20\ndecode:\n  max_len: 30\n", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, _, err := parseConfig([]byte(c.yaml))
			if c.want == nil {
				if err != nil {
					t.Fatalf("%v, want no error", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("no error; want one saying %q", c.want)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}

// TestRoundLenAboveMaxLenIsRefused: data.round_len pads every batch up to a multiple of itself, so one above
// data.max_len only pads (16384 tokens a row ran out of memory); one at or below it is fine.
func TestRoundLenAboveMaxLenIsRefused(t *testing.T) {
	for _, c := range []struct {
		roundLen, maxLen int
		want             string
	}{
		{16384, 50, "data.round_len is 16384, above data.max_len 50"},
		{51, 50, "data.round_len is 51, above data.max_len 50"},
		{50, 50, ""},
		{4, 50, ""},
	} {
		cfg := Default()
		cfg.Data.RoundLen, cfg.Data.MaxLen = c.roundLen, c.maxLen
		err := cfg.Validate()
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("round_len %d, max_len %d: Validate() = %v, want %q", c.roundLen, c.maxLen, err, c.want)
		}
	}
}

// TestReplacedPrecisionKeys loads configs that set train.bf16 and train.bf16x3, the keys train.precision replaced:
// each must load as the precision they meant, with one note naming the keys and the value; train.precision given
// beside them wins; an unknown precision is refused naming the key.
func TestReplacedPrecisionKeys(t *testing.T) {
	for _, c := range []struct {
		yaml, want, note string
	}{
		{"train:\n  bf16: true\n", "bf16", "train.bf16: true is replaced by train.precision; read as train.precision: bf16"},
		{"train:\n  bf16: true\n  bf16x3: true\n", "bf16", "train.bf16: true and train.bf16x3: true"},
		{"train:\n  bf16x3: true\n", "auto", "train.bf16x3: true is replaced by train.precision; read as train.precision: auto"},
		{"train:\n  bf16: false\n  bf16x3: false\n", "float32", "read as train.precision: float32"},
		{"train:\n  bf16x3: false\n  precision: bf16\n", "bf16", ""},
		{"train:\n  precision: float32\n", "float32", ""},
	} {
		cfg, notes, err := parseConfig([]byte(c.yaml))
		if err != nil {
			t.Fatalf("%q: %v", c.yaml, err)
		}
		if string(cfg.Train.Precision) != c.want || (c.note == "") != (len(notes) == 0) || len(notes) > 1 ||
			len(notes) == 1 && !strings.Contains(notes[0], c.note) {
			t.Errorf("%q: precision %q, notes %q; want %q with a note %q", c.yaml, cfg.Train.Precision, notes, c.want, c.note)
		}
	}
	if _, _, err := parseConfig([]byte("train:\n  precision: fp16\n")); err == nil || !strings.Contains(err.Error(), "train.precision") {
		t.Fatalf("precision fp16: %v, want an error naming train.precision", err)
	}
}

// TestSetReplacedPrecisionKey refuses --set train.bf16 and train.bf16x3, saying which train.precision to set.
func TestSetReplacedPrecisionKey(t *testing.T) {
	for set, want := range map[string]string{"train.bf16=true": "train.precision=bf16", "train.bf16x3=false": "train.precision=float32"} {
		cfg := Default()
		if err := cfg.Set(set); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("--set %s: %v, want an error saying --set %s", set, err, want)
		}
	}
}

// Small is the "small" configuration (configs/small.yaml): Default's model on lowercased words, the model and
// recipe of the PyTorch reference implementation that the speed and quality figures compare against (see
// docs/speed.md), whose BLEU is the tokenized, lowercased BLEU of the Multi30k literature.
func Small() Config {
	cfg := Default()
	cfg.Data.Lowercase, cfg.Data.Subword, cfg.Data.Merges = true, SubwordNone, 0
	return cfg
}

// TestDefaultPresetWith: the command line's keys over the default preset keep its guidance for a recurrent
// model, and start from Default (unguided) when they make the model a Transformer, which would otherwise fail
// validation on the recurrent alignment attention.
func TestDefaultPresetWith(t *testing.T) {
	for _, c := range []struct {
		name   string
		set    func(*Config) error
		guided bool
	}{
		{"nothing", nil, true},
		{"epochs", func(c *Config) error { c.Train.Epochs = 3; return nil }, true},
		{"transformer", func(c *Config) error { c.Model.Type = TypeTransformer; return nil }, false},
	} {
		cfg, err := DefaultPresetWith(c.set)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if guided := cfg.Model.FullContextAlignment && cfg.Train.GuidedAlignment == GuideAuto; guided != c.guided {
			t.Errorf("%s: guided %v, want %v", c.name, guided, c.guided)
		}
		if err := cfg.Validate(); err != nil {
			t.Errorf("%s: %v", c.name, err)
		}
	}
}
