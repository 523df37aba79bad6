package model

import (
	"strings"
	"testing"
)

func TestTransformerConfigChecks(t *testing.T) {
	for _, c := range []struct {
		name string
		edit func(*Config)
		want string // in the error; "" for none
	}{
		{"valid", func(*Config) {}, ""},
		{"heads", func(c *Config) { c.Model.Heads = 3 }, "does not divide model.d_model"},
		{"attention layer", func(c *Config) { c.Model.AttentionLayer = 3 }, "past the last"},
		{"unfused", func(c *Config) { c.Train.Unfused = true }, "train.unfused"},
		{"guided without a head", func(c *Config) { c.Train.GuidedAlignment = "auto" }, "model.alignment_head"},
		{"guided", func(c *Config) { c.Train.GuidedAlignment, c.Model.AlignmentHead = "auto", 2 }, ""},
		// model.attention is the recurrent model's, unread: a Transformer's guide does not ask it to be guidable
		{"guided, multi-head model.attention", func(c *Config) {
			c.Train.GuidedAlignment, c.Model.AlignmentHead, c.Model.Attention = "auto", 1, "multi-head"
		}, ""},
		{"alignment head", func(c *Config) { c.Model.AlignmentHead = 3 }, "model.alignment_head is 3, past the last of model.heads = 2"},
		{"negative alignment head", func(c *Config) { c.Model.AlignmentHead = -1 }, "model.alignment_head"},
		{"self-attention layers", func(c *Config) { c.Model.SelfAttentionLayers = 1 }, "self_attention_layers"},
		{"positions", func(c *Config) { c.Model.Positions = "rotary" }, "model.positions"},
		{"width", func(c *Config) { c.Model.DModel = 0 }, "model.d_model"},
	} {
		cfg := Default()
		cfg.Model = tinyTransformer(cfg.Model)
		c.edit(&cfg)
		err := cfg.Validate()
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: error %v, want one naming %q", c.name, err, c.want)
		}
	}
	// A recurrent model does not read the Transformer's keys: a checkpoint from before them (zeros) is valid and
	// resumes under today's defaults.
	old := Default()
	old.Model.Type, old.Model.DModel, old.Model.FF, old.Model.Positions, old.Model.MaxPositions = "", 0, 0, "", 0
	old.Model.AlignmentHead = 3 // (unread by a recurrent model)
	if err := old.Validate(); err != nil {
		t.Fatalf("a recurrent config without the Transformer's keys: %v", err)
	}
	if d := Diff(old, Default()); len(d) != 0 {
		t.Fatalf("a recurrent config without the Transformer's keys differs from the default in %v", d)
	}
}
