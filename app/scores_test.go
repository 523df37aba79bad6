package app

import (
	"context"
	"io"
	"testing"

	"github.com/attend-nmt/attend/align"
)

// smallDemoExactMatch is what every score function must reach on the small demo below (held-out exact match).
const smallDemoExactMatch = 0.95

// TestEveryScoreLearnsTheSmallDemo trains each score function on a smaller version of the demo (fewer and
// narrower units, fewer sentences, so each run takes seconds) and requires smallDemoExactMatch on its held-out
// sentences.
func TestEveryScoreLearnsTheSmallDemo(t *testing.T) {
	if testing.Short() {
		t.Skip("trains one small model per score function")
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
			if res.ExactMatch < smallDemoExactMatch {
				t.Fatalf("held-out exact match %.1f%%, want >= %.0f%%", 100*res.ExactMatch, 100*smallDemoExactMatch)
			}
		})
	}
}
