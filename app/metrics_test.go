package app

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/attend-nmt/attend/data"
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

// TestTrimMetricsRefusesAnEndlessLine: the log a resume trims is read a line at a time (issue #51's case 1), so
// a line longer than data.MaxLineBytes is refused, naming the file and the line, and the log is left as it was.
func TestTrimMetricsRefusesAnEndlessLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m.metrics.jsonl")
	log := "{\"event\":\"step\",\"step\":50,\"loss\":3}\n" + strings.Repeat("x", data.MaxLineBytes+1) + "\n"
	if err := os.WriteFile(path, []byte(log), 0o644); err != nil {
		t.Fatal(err)
	}
	err := trimMetrics(path, 100)
	if !errors.Is(err, data.ErrLineTooLong) || !strings.Contains(err.Error(), path+" line 2") {
		t.Fatalf("trimMetrics = %v; want ErrLineTooLong naming %s line 2", err, path)
	}
	if got, _ := os.ReadFile(path); string(got) != log {
		t.Fatal("a refused log was rewritten")
	}
}
