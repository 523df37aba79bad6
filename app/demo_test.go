package app

import (
	"context"
	"image/png"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/attend-nmt/attend/model"
)

func TestDemoConfigFileMatchesBuiltIn(t *testing.T) {
	cfg, err := model.LoadConfig("../configs/demo.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if cfg != DemoConfig() {
		t.Fatalf("configs/demo.yaml:\n%s\nDemoConfig():\n%s", cfg.YAML(), DemoConfig().YAML())
	}
}

// TestDemoReachesNinetyFivePercent runs the real demo (the same corpus sizes and config as `attend demo`) and
// requires at least 95% exact match on its 1,000 held-out sentences. About a minute on two cores.
func TestDemoReachesNinetyFivePercent(t *testing.T) {
	if testing.Short() {
		t.Skip("trains for about a minute")
	}
	t.Parallel() // beside TestEveryScoreLearnsTheSmallDemo's runs (see there)
	dir := t.TempDir()
	res, err := Demo(context.Background(), DemoRequest{Config: DemoConfig(), Dir: dir,
		Train: 8000, Valid: 500, Test: 1000, Stdout: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("exact match %.1f%%, attention AER %.3f, %.0fs", 100*res.ExactMatch, res.AER, res.Seconds)
	if res.ExactMatch < 0.95 {
		t.Fatalf("held-out exact match %.1f%%, want >= 95%%", 100*res.ExactMatch)
	}
	if res.AER > 0.3 {
		t.Fatalf("attention alignment error rate %.3f: the model translates without looking at the right words", res.AER)
	}
	if res.AlignedSentences < 900 {
		t.Fatalf("AER covers %d sentences", res.AlignedSentences)
	}
	for _, name := range []string{"heatmap.png", "heatmaps/0001.png"} {
		f, err := os.Open(filepath.Join(dir, name))
		if err != nil {
			t.Fatalf("the demo did not draw %s: %v", name, err)
		}
		_, err = png.Decode(f)
		f.Close()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "heatmaps", "index.html")); err != nil {
		t.Fatalf("no gallery: %v", err)
	}
}
