package app

import (
	"os"
	"path/filepath"
	"testing"
)

// TestTrimMetricsDropsStepsAfterTheCheckpoint: a resumed run trains again the steps logged after its
// checkpoint, so their records go, and so does a last line a crash cut short; other lines stay as they were.
func TestTrimMetricsDropsStepsAfterTheCheckpoint(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m.metrics.jsonl")
	log := `{"event":"step","step":50,"loss":3}
{"event":"valid","step":60,"valid_loss":2.5}
{"event":"note"}
{"event":"step","step":100,"loss":2}
{"event":"step","step":150,"loss":1.5}
{"event":"valid","step":160,"valid_loss":2.1}
{"event":"step","step":200,"lo`
	if err := os.WriteFile(path, []byte(log), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := trimMetrics(path, 100); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"event":"step","step":50,"loss":3}
{"event":"valid","step":60,"valid_loss":2.5}
{"event":"note"}
{"event":"step","step":100,"loss":2}
`
	if string(got) != want {
		t.Fatalf("trimmed log:\n%s\nwant:\n%s", got, want)
	}
	if err := trimMetrics(filepath.Join(t.TempDir(), "none.jsonl"), 5); err != nil {
		t.Fatalf("a missing log: %v", err)
	}
	if entries, _ := os.ReadDir(filepath.Dir(path)); len(entries) != 1 {
		t.Fatalf("files beside the log: %v", entries)
	}
}
