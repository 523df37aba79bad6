package model

import (
	"github.com/attend-nmt/attend/dist"
	"math"
	"math/rand/v2"
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
		{"unfused", func(c *Config) { c.Train.Unfused = true }, ""},
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

// TestUnfusedTransformerTrainsAsFused trains a float32 Transformer (learned positions, fewer than the batches'
// source positions, dropout, label smoothing, guided alignment on head 2 of the first block) for three steps
// with train.unfused and without, from the same weights with the same masks: each step's loss and guided loss
// agree to float32 rounding. The batches hold a padding row, whose source has no word.
func TestUnfusedTransformerTrainsAsFused(t *testing.T) {
	cfg := ModelConfig{Type: TypeTransformer, DModel: 8, Heads: 2, FF: 12, Layers: 2, Positions: "learned", MaxPositions: 2,
		AttentionLayer: 1, AlignmentHead: 2, Dropout: 0.25}
	var losses [2][][2]float64 // per run (fused, unfused), each step's loss and guided loss
	for run, unfused := range []bool{false, true} {
		m := newTestModel[float32](t, cfg, 9, 11, 1)
		tr := NewTrainer(m, 1e-2, 1, 2)
		tr.Unfused, tr.LabelSmoothing = unfused, 0.1
		tr.Guide, tr.GuideWeight = guideLinks, 0.5
		for step := 0; step < 3; step++ {
			b := randomBatch(rand.New(rand.NewPCG(5, uint64(step))), 9, 11, []int{3, 1, 2, 0}, []int{2, 3, 1, 0})
			res, err := tr.Step(b, rand.New(rand.NewPCG(9, uint64(step))), dist.Single{})
			if err != nil {
				t.Fatal(err)
			}
			losses[run] = append(losses[run], [2]float64{res.Loss, res.Guided})
		}
	}
	var worst float64
	for step, f := range losses[0] {
		u := losses[1][step]
		worst = math.Max(worst, math.Max(math.Abs(f[0]-u[0])/u[0], math.Abs(f[1]-u[1])/u[1]))
		if !near(f[0], u[0], 1e-4) || !near(f[1], u[1], 1e-4) || u[1] == 0 {
			t.Errorf("step %d: loss %.7g and guided %.7g fused, %.7g and %.7g unfused", step+1, f[0], f[1], u[0], u[1])
		}
	}
	if losses[0][0] == losses[0][2] {
		t.Errorf("the loss did not move in three steps: %v", losses[0])
	}
	t.Logf("losses %v fused; worst relative gap unfused %.2g", losses[0], worst)
}
