package main

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// TestPhaseBars: on a terminal each phase before training gets a bar (of bytes when its size is known, a
// spinner when not) that is cleared when it ends; in a log a phase writes nothing (app prints its summary line).
func TestPhaseBars(t *testing.T) {
	var bar, log bytes.Buffer
	rec := &barRecorder{bar: &bar, log: &log}
	p := rec.StartPhase("reading train.tsv", 4<<20)
	p.Set(1 << 20)
	time.Sleep(250 * time.Millisecond) // past the bar's throttle
	p.Set(4 << 20)
	p.End()
	if !strings.Contains(bar.String(), "reading train.tsv") || !strings.Contains(bar.String(), "MB") {
		t.Fatalf("the reading bar shows %q", bar.String())
	}
	bar.Reset()
	s := rec.StartPhase("learning subword merges", 0)
	time.Sleep(450 * time.Millisecond) // the spinner turns by itself
	s.End()
	if !strings.Contains(bar.String(), "learning subword merges") {
		t.Fatalf("the spinner shows %q", bar.String())
	}
	if log.Len() != 0 {
		t.Fatalf("the bars wrote to the log: %q", log.String())
	}
	plain := lineRecorder{log: &log}
	q := plain.StartPhase("reading train.tsv", 100)
	q.Set(100)
	q.End()
	if log.Len() != 0 {
		t.Fatalf("a phase wrote to the plain log: %q", log.String())
	}
}
