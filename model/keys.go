package model

import (
	"fmt"
	"math"
	"reflect"
	"strings"

	"github.com/attend-nmt/attend/align"
	"github.com/attend-nmt/attend/decoder"
	"github.com/attend-nmt/attend/encoder"
	"github.com/attend-nmt/attend/internal/bound"
	"github.com/attend-nmt/attend/kernels"
	"github.com/attend-nmt/attend/transformer"
)

// Key describes one config key: what the YAML loader and --set accept under its name, its default, and the range
// Validate holds it to. docs/config.md is generated from Keys and from the doc comments of the fields named here.
type Key struct {
	Name    string // section.key, as in YAML and --set: "model.emb"
	Section string // the section's YAML name: "model"
	Struct  string // the Go type of the section: "ModelConfig"
	Field   string // the Go field of the key in Struct: "Emb"
	Type    string // "integer", "non-negative integer", "number", "boolean" or "string"
	Default string // Default()'s value, as the key is written in YAML
	// Accepts says in words which values Validate accepts ("between 1 and 65536", "lstm, gru"), with the setting
	// under which the rule holds ("with model.attention local"); "" when every value of the type is accepted.
	Accepts string
	// Values lists the strings a string key accepts (nil for other keys); Accepts lists them too.
	Values []string
	// FixedOnResume is set for the keys that shape the model or its vocabularies: a checkpoint fixes them for good.
	FixedOnResume bool
	// BatchShaping is set for the keys that decide the batches of an epoch: a resumed run may change them only at
	// an epoch boundary.
	BatchShaping bool
}

// Keys lists every config key in the order of the Config struct.
func Keys() []Key {
	rules := map[string]keyRule{}
	for _, r := range keyRules() {
		rules[r.key] = r
	}
	def := reflect.ValueOf(Default())
	var keys []Key
	for i := range def.NumField() {
		sec := def.Type().Field(i)
		for j := range sec.Type.NumField() {
			f := sec.Type.Field(j)
			name := sec.Tag.Get("yaml") + "." + f.Tag.Get("yaml")
			k := Key{Name: name, Section: sec.Tag.Get("yaml"), Struct: sec.Type.Name(), Field: f.Name,
				Type:    strings.TrimPrefix(strings.TrimPrefix(kindName(f.Type.Kind()), "an "), "a "),
				Default: yamlScalar(def.Field(i).Field(j)), FixedOnResume: fixedOnResume(name), BatchShaping: batchShaping(name)}
			if r, ok := rules[name]; ok {
				k.Accepts, k.Values = r.String(), r.values
			}
			if f.Type.Kind() == reflect.Bool {
				k.Type = "boolean"
			}
			keys = append(keys, k)
		}
	}
	return keys
}

// yamlScalar writes a config value as it stands in a YAML file.
func yamlScalar(v reflect.Value) string {
	switch v.Kind() {
	case reflect.Float64:
		return bound.Num(v.Float())
	case reflect.String:
		if v.String() == "" {
			return `""`
		}
	}
	return fmt.Sprint(v.Interface())
}

// keyRule is the range a number key must lie in, or the values a string key may take. Validate enforces the
// rules (except those marked elsewhere) and Keys states them, so the reference and the checks cannot part.
// Whatever the rules say, a number key is finite (Validate's finite), so that no rule, conditional or checked
// elsewhere, can let NaN or ±Inf through.
type keyRule struct {
	key string
	// Range bounds a number key; its Note says what special values mean (for a path key, what "" means), added
	// to the error message.
	bound.Range
	values []string // the strings a string key accepts
	blank  bool     // "" is accepted too, meaning values[0] (as checkpoints from before the key have it)
	path   bool     // a string key naming a file: any value, "" for none (Note says what "" means)
	// when is "section.key=value": the rule holds only while that key has that value.
	when string
	// lines marks a string key holding a count in Range or a list of line numbers (TrainConfig.WatchLines, which
	// Validate calls).
	lines bool
	// elsewhere marks a rule that the package using the key checks (through Validate's call to it), so that
	// Validate does not report the same mistake twice.
	elsewhere bool
}

// keyRules lists the rules of every number and string key. Checks that tie two keys together (data.round_len
// at most data.max_len, data.merges 0 with data.subword none, model.heads dividing the widths it splits,
// train.best_metric bleu needing train.valid_bleu) are Validate's own, stated in the keys' doc comments.
func keyRules() []keyRule {
	inf := math.Inf(1)
	atLeast := func(key string, min float64, note string) keyRule {
		return keyRule{key: key, Range: bound.AtLeast(min, note)}
	}
	between := func(key string, min, max float64, note string) keyRule {
		return keyRule{key: key, Range: bound.Between(min, max, note)}
	}
	fraction := func(key, note string) keyRule { // [0, 1)
		return keyRule{key: key, Range: bound.Fraction(note)}
	}
	rng := func(key string, r bound.Range, when string) keyRule { return keyRule{key: key, Range: r, when: when} }
	return []keyRule{
		{key: "model.type", values: []string{TypeRNN, TypeTransformer}, blank: true},
		between("model.emb", 1, maxWidth, ""),
		between("model.enc_hidden", 1, maxWidth, ""),
		between("model.dec_hidden", 1, maxWidth, ""),
		between("model.attn_dim", 1, maxWidth, ""),
		{key: "model.cell", values: []string{string(encoder.LSTM), string(encoder.GRU)}, elsewhere: true},
		{key: "model.attention", values: align.Names(), elsewhere: true},
		{key: "model.window", Range: bound.AtLeast(1, ""), when: "model.attention=local", elsewhere: true},
		{key: "model.heads", Range: bound.AtLeast(1, ""), when: "model.attention=multi-head", elsewhere: true},
		between("model.self_attention_layers", 0, encoder.MaxSelfAttentionLayers, "0: none"),
		{key: "model.temperature", Range: bound.Range{Min: 0, Above: true, Max: inf}, when: "model.attention=hard", elsewhere: true},
		between("model.layers", 0, maxLayers, "stacked recurrent layers of the encoder and of the decoder; 0 counts as 1"),
		fraction("model.dropout", ""),
		rng("model.d_model", bound.Between(1, maxWidth, ""), "model.type="+TypeTransformer),
		rng("model.ff", bound.Between(1, 4*maxWidth, ""), "model.type="+TypeTransformer),
		{key: "model.positions", values: []string{transformer.Sinusoidal, transformer.Learned}, blank: true},
		rng("model.max_positions", bound.Between(1, maxLength, ""), "model.positions="+transformer.Learned),
		rng("model.attention_layer", bound.Between(0, maxLayers, "0: the last"), "model.type="+TypeTransformer),
		rng("model.alignment_head", bound.Between(0, maxWidth, "0: the heads' average; at most model.heads"), "model.type="+TypeTransformer),

		atLeast("data.min_freq", 1, ""),
		{key: "data.max_vocab", Range: bound.Range{Min: 5, Max: inf, Zero: true, Note: "0: no cap; 4 entries are reserved for <pad> <unk> <s> </s>"}},
		between("data.max_len", 1, maxLength, ""),
		between("data.batch", 1, maxBatch, ""),
		atLeast("data.batch_tokens", 0, "0: batches of data.batch sentence pairs"),
		atLeast("data.bucket_chunk", 1, ""),
		between("data.round_len", 1, maxLength, ""),
		{key: "data.subword", values: []string{SubwordNone, SubwordBPE}, blank: true},
		rng("data.merges", bound.Between(1, maxMerges, "the number of BPE merges to learn with data.subword bpe"), "data.subword="+SubwordBPE),
		between("data.memory_mb", 0, maxMemoryMB, "0: a quarter of the machine's memory"),

		atLeast("train.epochs", 1, ""),
		atLeast("train.max_steps", 0, "0: no limit"),
		{key: "train.lr", Range: bound.Range{Min: 0, Above: true, Max: 10}},
		atLeast("train.clip", 0, "0: no clipping"),
		atLeast("train.log_every", 1, ""),
		atLeast("train.save_every", 0, "0: only at epoch ends"),
		between("train.threads", 0, maxThreads, "0: one per CPU core"),
		between("train.workers", 0, maxThreads, "0: one per thread of train.threads"),
		between("train.graph_cache", 1, 1024, ""),
		atLeast("train.max_bad_steps", 1, ""),
		atLeast("train.valid_every", 0, "0: at epoch ends only"),
		fraction("train.lr_decay", "0: no decay"),
		atLeast("train.patience", 0, "0: no early stopping"),
		atLeast("train.warmup", 0, "0: constant learning rate"),
		fraction("train.label_smoothing", "0: none"),
		atLeast("train.keep_last", 0, "0: keep only --out and the best"),
		atLeast("train.valid_bleu", 0, "0: no validation BLEU"),
		{key: "train.best_metric", values: []string{"ppl", "bleu"}, blank: true},
		{key: "train.precision", values: kernels.Precisions(), blank: true},
		{key: "train.guided_alignment", path: true, Range: bound.Range{Note: `or auto, the built-in aligner's links; "": none`}},
		atLeast("train.guided_alignment_weight", 0, "used with train.guided_alignment"),
		{key: "train.watch_sentences", Range: bound.AtLeast(0, "0: none"), lines: true},

		between("decode.max_len", 1, maxLength, ""),
		between("decode.batch", 1, maxBatch, ""),
		{key: "decode.alpha", Range: decoder.AlphaRange()}, // translate --alpha and serve hold to the same range
	}
}

// String says in words what the rule accepts, as the reference and the error messages put it.
func (r keyRule) String() string {
	var s string
	switch {
	case r.path:
		s = "a file path (" + r.Note + ")"
	case r.values != nil:
		s = strings.Join(r.values, ", ")
	case r.lines:
		s = "a count, " + r.Text(true) + " (" + r.Note + "), or line numbers from 1 separated by commas"
	default:
		s = r.Text(r.isInt())
	}
	if r.when != "" {
		key, value, _ := strings.Cut(r.when, "=")
		s += " (with " + key + " " + value
		if r.values == nil && !r.path {
			s += "; else also 0"
		}
		s += ")"
	}
	return s
}

// isInt reports whether the rule's key is an integer (or, with lines, a count).
func (r keyRule) isInt() bool {
	v, ok := keyValue(reflect.ValueOf(Default()), r.key)
	return r.lines || ok && v.Kind() == reflect.Int
}

// check returns the rule's complaint about cfg, or nil.
// A number key whose rule holds only under a setting (when) is held, when that setting is otherwise and nothing
// reads the key, to the same range or 0 (what checkpoints from before the key hold): a value no setting could
// read (model.window -5, model.temperature -1) is a mistake whichever attention is chosen. Under the setting, a
// rule checked elsewhere is left to the package that reads the key.
func (r keyRule) check(cfg Config) error {
	top := reflect.ValueOf(cfg)
	v, ok := keyValue(top, r.key)
	if !ok {
		panic("config: rule for unknown key " + r.key) // keyRules and Config disagree: a test catches it
	}
	if r.when != "" {
		key, want, _ := strings.Cut(r.when, "=")
		if w, ok := keyValue(top, key); !ok || fmt.Sprint(w.Interface()) != want {
			unread := r.Range
			unread.Zero, unread.Note = true, "read with "+key+" "+want
			return checkNumber(unread, r.key, v)
		}
	}
	if r.elsewhere || r.lines {
		return nil
	}
	if v.Kind() == reflect.String {
		if r.path || r.blank && v.String() == "" {
			return nil
		}
		for _, ok := range r.values {
			if v.String() == ok {
				return nil
			}
		}
		return fmt.Errorf("config: %s is %q; want %s", r.key, v.String(), orList(r.values))
	}
	return checkNumber(r.Range, r.key, v)
}

// checkNumber returns nil when v, the value of the int or float64 key, lies in rng, else the range's complaint;
// a value of any other kind is not a number and passes.
func checkNumber(rng bound.Range, key string, v reflect.Value) error {
	var err error
	switch v.Kind() {
	case reflect.Int:
		err = rng.CheckInt(key, v.Int())
	case reflect.Float64:
		err = rng.Check(key, v.Float())
	}
	if err != nil {
		return fmt.Errorf("config: %w", err)
	}
	return nil
}

// finite returns an error for each number key of cfg that is NaN or ±Inf, whether a rule checks the key or not,
// and whether or not the model reads it (model.temperature is read by hard attention only): no such value
// means anything, and the first checkpoint saved would fail to write it (JSON has no NaN). It walks Keys, so a
// number key added later is covered without a word.
func finite(cfg Config) (errs []error, bad map[string]bool) {
	bad = map[string]bool{}
	for _, k := range Keys() {
		if v, _ := keyValue(reflect.ValueOf(cfg), k.Name); v.Kind() == reflect.Float64 && !isFinite(v.Float()) {
			bad[k.Name] = true
			errs = append(errs, fmt.Errorf("config: %s is %v; want a finite number", k.Name, v.Float()))
		}
	}
	return errs, bad
}

// orList is "a, b or c".
func orList(values []string) string {
	if len(values) < 2 {
		return strings.Join(values, "")
	}
	return strings.Join(values[:len(values)-1], ", ") + " or " + values[len(values)-1]
}

// keyValue returns the field of config value top named "section.key".
func keyValue(top reflect.Value, key string) (reflect.Value, bool) {
	section, name, _ := strings.Cut(key, ".")
	sec, ok := fieldByTag(top, section)
	if !ok {
		return reflect.Value{}, false
	}
	return fieldByTag(sec, name)
}

// KeyRange is the range Validate holds the number key name ("decode.max_len") to, for a command-line flag that
// stands for the key to hold to as well. It panics for a key without a range, which is a programming error.
func KeyRange(name string) bound.Range {
	for _, r := range keyRules() {
		if r.key == name && r.values == nil && !r.path {
			return r.Range
		}
	}
	panic("config: no range for key " + name)
}
