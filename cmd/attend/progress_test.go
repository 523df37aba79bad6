package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/attend-nmt/attend/model"
)

// TestPhaseBars: on a terminal each phase before training gets a bar (of bytes when its size is known, a
// spinner when not) that is cleared when it ends; in a log a phase writes nothing (app prints its summary line).
func TestPhaseBars(t *testing.T) {
	var bar, log bytes.Buffer
	rec := &barRecorder{progressOut: progressOut{w: &bar, bars: true}, log: &log}
	p := rec.StartPhase("reading train.tsv", 4<<20, "")
	p.Set(1 << 20)
	time.Sleep(250 * time.Millisecond) // past the bar's throttle
	p.Set(4 << 20)
	p.End()
	if !strings.Contains(bar.String(), "reading train.tsv") || !strings.Contains(bar.String(), "MB") {
		t.Fatalf("the reading bar shows %q", bar.String())
	}
	bar.Reset()
	s := rec.StartPhase("learning subword merges", 0, "")
	time.Sleep(450 * time.Millisecond) // the spinner turns by itself
	s.End()
	if !strings.Contains(bar.String(), "learning subword merges") {
		t.Fatalf("the spinner shows %q", bar.String())
	}
	if log.Len() != 0 {
		t.Fatalf("the bars wrote to the log: %q", log.String())
	}
	plain := &lineRecorder{log: &log, progressOut: progressOut{w: &bar, every: time.Hour}}
	bar.Reset()
	q := plain.StartPhase("reading train.tsv", 100, "")
	q.Set(100)
	q.End()
	if log.Len() != 0 || bar.Len() != 0 {
		t.Fatalf("a phase shorter than the interval wrote %q to the plain log and %q to standard error", log.String(), bar.String())
	}
}

// TestTrainingBarCountsToTheRunsEnd: on a terminal one bar follows the whole run and counts to its last step
// (--max-steps 60 in an epoch of 250 batches: 60, not 250), and a resumed run's bar starts where it stands.
func TestTrainingBarCountsToTheRunsEnd(t *testing.T) {
	var bar, log bytes.Buffer
	rec := &barRecorder{progressOut: progressOut{w: &bar, bars: true}, log: &log}
	rec.EpochStart(model.EpochStart{Epoch: 1, Epochs: 10, Batches: 250, Steps: 60})
	for range 30 {
		rec.BatchDone()
	}
	time.Sleep(250 * time.Millisecond) // past the bar's throttle
	rec.BatchDone()
	if got := bar.String(); !strings.Contains(got, "(31/60)") || strings.Contains(got, "/250)") || !strings.Contains(got, "epoch 1/10") {
		t.Fatalf("the bar of a run of 60 steps shows %q", got)
	}
	bar.Reset()
	rec = &barRecorder{progressOut: progressOut{w: &bar, bars: true}, log: &log}
	rec.EpochStart(model.EpochStart{Epoch: 2, Epochs: 3, Batches: 100, Done: 10, Step: 110, Steps: 300})
	rec.EpochEnd()
	rec.EpochStart(model.EpochStart{Epoch: 3, Epochs: 3, Batches: 100, Step: 200, Steps: 300})
	time.Sleep(250 * time.Millisecond)
	rec.BatchDone()
	if got := bar.String(); !strings.Contains(got, "(110/300)") || !strings.Contains(got, "(201/300)") || !strings.Contains(got, "epoch 3/3") {
		t.Fatalf("the bar of a resumed run of 300 steps shows %q", got)
	}
	if log.Len() != 0 {
		t.Fatalf("the bar wrote to the log: %q", log.String())
	}
}

// TestMeterPlainLines: off a terminal a meter writes a plain line per interval with the work done, its total
// and an ETA, and a last line when it ends; work shorter than the interval writes nothing, and --quiet nothing
// at all.
func TestMeterPlainLines(t *testing.T) {
	var w bytes.Buffer
	m := progressOut{w: &w, every: 20 * time.Millisecond}.start("translating test.de", 1000, "sentence")
	m.Add(100)
	time.Sleep(30 * time.Millisecond)
	m.Add(300)
	m.End()
	lines := strings.Split(strings.TrimSpace(w.String()), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "translating test.de: 400/1000 sentences (40%), ") ||
		!strings.Contains(lines[0], "/s, elapsed ") || !strings.Contains(lines[0], ", ETA ") ||
		!strings.HasPrefix(lines[1], "translating test.de: 400/1000 sentences (40%), ") || !strings.Contains(lines[1], " took ") {
		t.Fatalf("plain progress lines:\n%s", w.String())
	}
	if strings.Contains(w.String(), "\r") {
		t.Fatalf("a carriage return in plain lines: %q", w.String())
	}
	w.Reset()
	m = progressOut{w: &w, every: time.Hour}.start("translating", 10, "sentence")
	m.Add(10)
	m.End()
	q := progressOut{w: &w, every: time.Nanosecond, quiet: true}.start("translating", 10, "sentence")
	q.Add(5)
	q.End()
	if w.Len() != 0 {
		t.Fatalf("short or quiet work wrote %q", w.String())
	}
	// Work of unknown length says that it goes on.
	// Its lines come from a ticker goroutine, which a loaded machine may run late: wait for the first line (up to
	// a generous deadline) rather than for a fixed time.
	var ticked lockedBuffer
	u := progressOut{w: &ticked, every: 20 * time.Millisecond}.start("learning subword merges", 0, "")
	for deadline := time.Now().Add(10 * time.Second); ticked.String() == "" && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	u.End()
	if got := ticked.String(); !strings.HasPrefix(got, "learning subword merges: elapsed ") || !strings.Contains(got, "took ") {
		t.Fatalf("a phase of unknown length wrote %q", got)
	}
}
