package app

import (
	"context"
	"io"
	"testing"

	"github.com/attend-nmt/attend/align"
)

// TestEveryScoreLearnsTheSmallDemo trains each score function on a smaller version of the demo (fewer and
// narrower units, fewer sentences, so each run takes seconds) and requires smallDemoExactMatch on its held-out
// sentences.
func TestEveryScoreLearnsTheSmallDemo(t *testing.T) {
	if testing.Short() {
		t.Skip("trains one small model per score function")
	}
	// smallDemoExactMatch is the held-out exact match each score function must reach on the small demo below; what
	// one run measured is in the comment (2,000 training pairs, 8 epochs, encoder 2×32, decoder 64).
	smallDemoExactMatch := map[string]float64{
		"additive":   0.95, // 98.3%
		"dot":        0.95, // 96.3%
		"scaled-dot": 0.65, // 71.3%: q and h are 64 wide and the LSTM state lies in (−1, 1), so qᵀh/8 starts nearly
		// flat and sharpens slowly; it reached 92.7% at twice the widths and 3,000 pairs
		"general": 0.95, // 96.3%
		"cosine":  0.95, // 99.7%
		"concat":  0.35, // 40.0%: its weights cannot depend on the decoder state (see align.Concat), so the
		// decoder sees one fixed summary of the source: the baseline the other scores are measured against
		"local":      0.90, // 92.0%, with the sharpest alignments (AER 0.006): window 3 around a predicted centre
		"multi-head": 0.95, // 98.3% (4 heads of 8)
		"hard":       0.85, // 90.0%: one word per output word, chosen by sampling in training (τ = 1)
	}
	for _, attention := range align.Names() {
		t.Run(attention, func(t *testing.T) {
			cfg := DemoConfig()
			cfg.Model.Attention = attention
			cfg.Model.Emb, cfg.Model.EncHidden, cfg.Model.DecHidden, cfg.Model.AttnDim = 32, 32, 64, 32
			cfg.Train.Epochs = 8
			res, err := Demo(context.Background(), DemoRequest{Config: cfg, Dir: t.TempDir(),
				Train: 2000, Valid: 200, Test: 300, Stdout: io.Discard})
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s: exact match %.1f%%, attention AER %.3f, %.0fs", attention, 100*res.ExactMatch, res.AER, res.Seconds)
			want, ok := smallDemoExactMatch[attention]
			if !ok {
				t.Fatalf("no accuracy stated for %s in smallDemoExactMatch", attention)
			}
			if res.ExactMatch < want {
				t.Fatalf("held-out exact match %.1f%%, want >= %.0f%%", 100*res.ExactMatch, 100*want)
			}
		})
	}
}

// TestSelfAttentionLearnsTheSmallDemo trains the small demo of TestEveryScoreLearnsTheSmallDemo with one
// self-attention block over the recurrent encoder (model.self_attention_layers=1, 4 heads of 16 over the memory
// width 64) under the default additive score, and requires 95% held-out exact match.
func TestSelfAttentionLearnsTheSmallDemo(t *testing.T) {
	if testing.Short() {
		t.Skip("trains a small model")
	}
	// One run measured 100.0% (attention AER 0.187, against 0.033 without the block: the decoder now attends over
	// mixed positions), in 78 s against 34 s for the same demo without it, on a machine shared with other jobs.
	const want = 0.95
	cfg := DemoConfig()
	cfg.Model.SelfAttentionLayers, cfg.Model.Heads = 1, 4
	cfg.Model.Emb, cfg.Model.EncHidden, cfg.Model.DecHidden, cfg.Model.AttnDim = 32, 32, 64, 32
	cfg.Train.Epochs = 8
	res, err := Demo(context.Background(), DemoRequest{Config: cfg, Dir: t.TempDir(),
		Train: 2000, Valid: 200, Test: 300, Stdout: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("self-attention 1 layer: exact match %.1f%%, attention AER %.3f, %.0fs", 100*res.ExactMatch, res.AER, res.Seconds)
	if res.ExactMatch < want {
		t.Fatalf("held-out exact match %.1f%%, want >= %.0f%%", 100*res.ExactMatch, 100*want)
	}
}
