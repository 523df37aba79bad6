package app

import (
	"context"
	"io"
	"testing"

	"github.com/attend-nmt/attend/align"
	"github.com/attend-nmt/attend/model"
)

// smallDemoVariant is one attention variant trained on the small demo: the settings it changes from the small
// demo's (2,000 training pairs, 8 epochs, embeddings 32, encoder 2×32, decoder 64, attention 32) and the
// held-out exact match it must reach. What one run measured is in the comment.
type smallDemoVariant struct {
	name  string
	set   func(*model.Config)
	train int // training pairs (0: 2,000)
	want  float64
}

func attention(name string) func(*model.Config) {
	return func(c *model.Config) { c.Model.Attention = name }
}

// smallDemoVariants has an entry for every score of align.Names and for the layers that combine with them. The
// figures in the comments are this test's (it is deterministic for one CPU; these were measured on 2026-12-05 with
// AVX512-BF16's bfloat16 products, the default there); those in parentheses were measured, with an earlier
// dropout stream, when the settings were chosen.
var smallDemoVariants = []smallDemoVariant{
	{name: "additive", set: attention("additive"), want: 0.95}, // 98.0%
	// dot: 96.0% at 8 epochs, 98.0% at 10.
	{name: "dot", set: func(c *model.Config) { c.Model.Attention, c.Train.Epochs = "dot", 10 }, want: 0.95},
	// scaled-dot: at the small widths the unprojected LSTM state lies in (−1, 1) and qᵀh/8 starts nearly flat
	// (79.3% at 8 epochs, 92.3% at 12); at twice the widths the states have room to grow: 99.0%.
	{name: "scaled-dot", set: func(c *model.Config) {
		c.Model.Attention = "scaled-dot"
		c.Model.Emb, c.Model.EncHidden, c.Model.DecHidden, c.Model.AttnDim = 64, 64, 128, 64
	}, want: 0.95},
	// general: 95.3% at 8 epochs, 95.0% at 10, 99.7% at 12.
	{name: "general", set: func(c *model.Config) { c.Model.Attention, c.Train.Epochs = "general", 12 }, want: 0.95},
	{name: "cosine", set: attention("cosine"), want: 0.95}, // 97.7%
	// concat: its weights cannot depend on the decoder state (see align.Concat), so the decoder sees one fixed
	// summary of the source: the baseline the other scores are measured against: 44.0% (44.7% with input feeding).
	{name: "concat", set: attention("concat"), want: 0.35},
	// local: the demo moves words further than window 3 reaches (90.7%; 94.0% at 12 epochs); window 5: 99.0%,
	// with sharp alignments (AER 0.024).
	{name: "local", set: func(c *model.Config) { c.Model.Attention, c.Model.Window = "local", 5 }, want: 0.95},
	{name: "multi-head", set: attention("multi-head"), want: 0.95}, // 98.7% (4 heads of 8)
	// hard: one word per output word, sampled in training (τ = 1), learns more slowly (87.7% at 8 epochs, 95.3% at
	// 12); at 16: 98.7%.
	{name: "hard", set: func(c *model.Config) { c.Model.Attention, c.Train.Epochs = "hard", 16 }, want: 0.95},
	{name: "additive+input-feeding", set: func(c *model.Config) { c.Model.InputFeeding = true }, want: 0.95}, // 98.3%
	// One self-attention block over the recurrent encoder, 4 heads of 16 over the memory width 64: 99.7% (AER
	// 0.211, against 0.017 without the block: the decoder attends over mixed positions).
	{name: "additive+self-attention", set: func(c *model.Config) { c.Model.SelfAttentionLayers, c.Model.Heads = 1, 4 }, want: 0.95},
	{name: "additive+2-layers", set: func(c *model.Config) { c.Model.Layers = 2 }, want: 0.95}, // 97.7% (AER 0.012)
}

// TestEveryScoreLearnsTheSmallDemo trains each variant on a smaller version of the demo (fewer and narrower
// units, fewer sentences, so each run takes seconds) and requires its stated held-out exact match.
func TestEveryScoreLearnsTheSmallDemo(t *testing.T) {
	if testing.Short() {
		t.Skip("trains one small model per attention variant")
	}
	stated := map[string]bool{}
	for _, v := range smallDemoVariants {
		stated[v.name] = true
	}
	for _, name := range align.Names() {
		if !stated[name] {
			t.Errorf("no small-demo accuracy stated for %s in smallDemoVariants", name)
		}
	}
	for _, v := range smallDemoVariants {
		t.Run(v.name, func(t *testing.T) {
			// Each run is a tiny model that keeps about one core busy: on a machine of several, runs side by
			// side finish sooner, with the same results (a run's arithmetic depends on its own settings only).
			t.Parallel()
			cfg := DemoConfig()
			cfg.Model.Emb, cfg.Model.EncHidden, cfg.Model.DecHidden, cfg.Model.AttnDim = 32, 32, 64, 32
			cfg.Train.Epochs = 8
			cfg.Train.WatchSentences = "0" // drawing watched sentences at every validation is the watch tests' concern
			v.set(&cfg)
			train := v.train
			if train == 0 {
				train = 2000
			}
			res, err := Demo(context.Background(), DemoRequest{Config: cfg, Dir: t.TempDir(),
				Train: train, Valid: 200, Test: 300, Stdout: io.Discard})
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s: exact match %.1f%%, attention AER %.3f, %.0fs", v.name, 100*res.ExactMatch, res.AER, res.Seconds)
			if res.ExactMatch < v.want {
				t.Fatalf("held-out exact match %.1f%%, want >= %.0f%%", 100*res.ExactMatch, 100*v.want)
			}
		})
	}
}
