package model

import (
	"bytes"
	"fmt"
	"os"
	"reflect"
	"strconv"
	"strings"

	"github.com/attend-nmt/attend/encoder"
	"go.yaml.in/yaml/v3"
)

// Config is everything a training run reads: one struct, loaded from YAML on top of Default, with any key
// overridable on the command line as section.key=value.
type Config struct {
	Model  ModelConfig  `yaml:"model"`
	Data   DataConfig   `yaml:"data"`
	Train  TrainConfig  `yaml:"train"`
	Decode DecodeConfig `yaml:"decode"`
}

// ModelConfig gives the network's sizes (BENCHMARK.md's "small" by default).
type ModelConfig struct {
	Emb       int     `yaml:"emb"`        // source and target embedding width
	EncHidden int     `yaml:"enc_hidden"` // encoder units per direction
	DecHidden int     `yaml:"dec_hidden"` // decoder LSTM units
	AttnDim   int     `yaml:"attn_dim"`   // width of the additive attention layer
	Cell      string  `yaml:"cell"`       // encoder cell: lstm or gru
	Attention string  `yaml:"attention"`  // score function: mlp
	Dropout   float64 `yaml:"dropout"`    // on embeddings and before the output layer
}

// DataConfig controls tokenizing, vocabularies and batching.
type DataConfig struct {
	Lowercase   bool `yaml:"lowercase"`    // lowercase before tokenizing
	MinFreq     int  `yaml:"min_freq"`     // keep tokens seen at least this often in training data
	MaxVocab    int  `yaml:"max_vocab"`    // cap on vocabulary size including specials (0: none)
	MaxLen      int  `yaml:"max_len"`      // drop training pairs with a side longer than this
	Batch       int  `yaml:"batch"`        // sentence pairs per batch
	BucketChunk int  `yaml:"bucket_chunk"` // sort by source length within chunks of this many batches
	RoundLen    int  `yaml:"round_len"`    // round padded lengths up to a multiple of this (fewer graph shapes)
}

// TrainConfig controls the optimizer and the training loop.
type TrainConfig struct {
	Epochs     int     `yaml:"epochs"`
	MaxSteps   int     `yaml:"max_steps"` // stop after this many steps in all (0: no limit)
	LR         float64 `yaml:"lr"`        // Adam learning rate
	Clip       float64 `yaml:"clip"`      // global gradient-norm clip (0: none)
	Seed       uint64  `yaml:"seed"`
	LogEvery   int     `yaml:"log_every"`   // steps between metrics lines
	SaveEvery  int     `yaml:"save_every"`  // steps between checkpoints within an epoch (0: only at epoch ends)
	Threads    int     `yaml:"threads"`     // CPU threads (GOMAXPROCS); 0: all
	GraphCache int     `yaml:"graph_cache"` // how many compiled batch shapes to keep
	Unfused    bool    `yaml:"unfused"`     // build graphs from gorgonia's own ops, not the fused kernels (for checking)
}

// DecodeConfig controls translation.
type DecodeConfig struct {
	MaxLen int `yaml:"max_len"` // longest output in tokens
	Batch  int `yaml:"batch"`   // sentences per decoding batch
}

// Default is the "small" configuration of ../shared/BENCHMARK.md.
func Default() Config {
	return Config{
		Model:  ModelConfig{Emb: 128, EncHidden: 128, DecHidden: 256, AttnDim: 128, Cell: "lstm", Attention: "mlp", Dropout: 0.2},
		Data:   DataConfig{Lowercase: true, MinFreq: 2, MaxLen: 50, Batch: 64, BucketChunk: 100, RoundLen: 4},
		Train:  TrainConfig{Epochs: 10, LR: 1e-3, Clip: 1, Seed: 1, LogEvery: 50, SaveEvery: 500, Threads: 2, GraphCache: 4},
		Decode: DecodeConfig{MaxLen: 80, Batch: 64},
	}
}

// LoadConfig reads a YAML file over Default. Unknown keys are errors, reported with their line.
func LoadConfig(path string) (Config, error) {
	cfg := Default()
	raw, err := os.ReadFile(path)
	if err != nil {
		return cfg, fmt.Errorf("config: %w", err)
	}
	if err := decodeStrict(raw, &cfg); err != nil {
		return cfg, fmt.Errorf("config %s: %w", path, err)
	}
	return cfg, cfg.Validate()
}

func decodeStrict(raw []byte, cfg *Config) error {
	dec := yaml.NewDecoder(bytes.NewReader(raw))
	dec.KnownFields(true)
	if err := dec.Decode(cfg); err != nil && err.Error() != "EOF" {
		return err
	}
	return nil
}

// Set applies one "section.key=value" override, for example "train.lr=5e-4". The key is the YAML name; the value
// must parse as the key's type (an integer key rejects "1.5").
func (c *Config) Set(assignment string) error {
	key, value, ok := strings.Cut(assignment, "=")
	section, name, dotted := strings.Cut(key, ".")
	if !ok || !dotted || section == "" || name == "" {
		return fmt.Errorf("config: --set %q: want section.key=value", assignment)
	}
	sec, ok := fieldByTag(reflect.ValueOf(c).Elem(), section)
	if !ok {
		return fmt.Errorf("config: --set %q: no section %q", assignment, section)
	}
	field, ok := fieldByTag(sec, name)
	if !ok {
		return fmt.Errorf("config: --set %q: section %s has no key %q", assignment, section, name)
	}
	var err error
	switch field.Kind() {
	case reflect.String:
		field.SetString(value)
	case reflect.Bool:
		var b bool
		b, err = strconv.ParseBool(value)
		field.SetBool(b)
	case reflect.Int:
		var n int64
		n, err = strconv.ParseInt(value, 10, 64)
		field.SetInt(n)
	case reflect.Uint64:
		var n uint64
		n, err = strconv.ParseUint(value, 10, 64)
		field.SetUint(n)
	case reflect.Float64:
		var f float64
		f, err = strconv.ParseFloat(value, 64)
		field.SetFloat(f)
	default:
		panic(fmt.Sprintf("config: key %s has unsupported kind %s", key, field.Kind()))
	}
	if err != nil {
		return fmt.Errorf("config: --set %q: %s wants a %s: %w", assignment, key, field.Kind(), err)
	}
	return nil
}

// fieldByTag returns the field of struct v whose yaml tag is name.
func fieldByTag(v reflect.Value, name string) (reflect.Value, bool) {
	for i := 0; i < v.NumField(); i++ {
		if v.Type().Field(i).Tag.Get("yaml") == name {
			return v.Field(i), true
		}
	}
	return reflect.Value{}, false
}

// Validate reports settings that cannot work.
func (c Config) Validate() error {
	m := c.Model
	switch {
	case m.Emb <= 0 || m.EncHidden <= 0 || m.DecHidden <= 0 || m.AttnDim <= 0:
		return fmt.Errorf("config: model sizes must be positive (emb %d, enc_hidden %d, dec_hidden %d, attn_dim %d)", m.Emb, m.EncHidden, m.DecHidden, m.AttnDim)
	case m.Dropout < 0 || m.Dropout >= 1:
		return fmt.Errorf("config: model.dropout %g must be in [0, 1)", m.Dropout)
	case m.Attention != "mlp":
		return fmt.Errorf("config: model.attention %q: only mlp is available", m.Attention)
	case c.Data.Batch <= 0:
		return fmt.Errorf("config: data.batch must be positive, got %d", c.Data.Batch)
	case c.Train.LR <= 0:
		return fmt.Errorf("config: train.lr must be positive, got %g", c.Train.LR)
	case c.Decode.MaxLen <= 0:
		return fmt.Errorf("config: decode.max_len must be positive, got %d", c.Decode.MaxLen)
	}
	return encoder.Cell(m.Cell).Validate()
}

// YAML returns the configuration as YAML text.
func (c Config) YAML() string {
	out, err := yaml.Marshal(c)
	if err != nil {
		panic(err) // a plain struct always marshals
	}
	return string(out)
}
