package app

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"github.com/attend-nmt/attend/kernels"
	"io"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/attend-nmt/attend/data"
	"github.com/attend-nmt/attend/lexicon"
	"github.com/attend-nmt/attend/model"
)

// untrainedModel is a small random model: enough to translate (badly) and test the plumbing around it.
func untrainedModel(t *testing.T) *model.Seq2Seq[float32] {
	t.Helper()
	words := [][]string{strings.Fields("a b c d e")}
	m, err := model.New[float32](tinyTrainConfig().Model, data.BuildVocab(words, 1, 0), data.BuildVocab(words, 1, 0))
	if err != nil {
		t.Fatal(err)
	}
	m.Init(rand.New(rand.NewPCG(1, 0)))
	return m
}

// TestTranslateAnswersEachLineBeforeInputEnds writes one line at a time into a pipe and reads its translation
// before writing the next: translate must not wait for the end of the input.
func TestTranslateAnswersEachLineBeforeInputEnds(t *testing.T) {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() {
		_, err := Translate(context.Background(), TranslateRequest{TextOptions: TextOptions{Lowercase: true, Decode: DecodeOptions{MaxLen: 5, Batch: 64}},
			Model: untrainedModel(t), Input: inR, InputName: "stdin", Output: outW})
		outW.CloseWithError(err)
		done <- err
	}()
	answers := bufio.NewReader(outR)
	for _, line := range []string{"a b c", "d e", "", "e"} {
		if _, err := io.WriteString(inW, line+"\n"); err != nil {
			t.Fatal(err)
		}
		got, err := answers.ReadString('\n')
		if err != nil {
			t.Fatalf("no translation of %q while the input is open: %v", line, err)
		}
		if line == "" && got != "\n" {
			t.Fatalf("an empty line translated to %q", got)
		}
	}
	inW.Close()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// TestTranslateStopsWhenCancelled cancels a translation whose input never ends.
func TestTranslateStopsWhenCancelled(t *testing.T) {
	inR, inW := io.Pipe()
	defer inW.Close()
	ctx, cancel := context.WithCancel(context.Background())
	var out bytes.Buffer
	done := make(chan error, 1)
	go func() {
		_, err := Translate(ctx, TranslateRequest{TextOptions: TextOptions{Decode: DecodeOptions{MaxLen: 5, Batch: 8}},
			Model: untrainedModel(t), Input: inR, InputName: "stdin", Output: &out})
		done <- err
	}()
	io.WriteString(inW, "a b\n")
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Translate = %v, want context.Canceled", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Translate did not stop within 5 s of the cancel")
	}
}

// TestTranslateKeepsOrderAndExportsEmptyLinesAsEmptyLists translates more lines than one window holds, with
// an empty line and an invalid one at the end: outputs keep the input order, the empty line's attention record
// has empty lists (not null), and the bad line's error names it after everything before it was written.
func TestTranslateKeepsOrderAndExportsEmptyLinesAsEmptyLists(t *testing.T) {
	var in strings.Builder
	n := 16*runtime.GOMAXPROCS(0)*windowBatchesPerCore + 44 // a window and a part of one, with batch 16
	for i := 0; i < n; i++ {
		if i == 7 {
			in.WriteString("\n")
			continue
		}
		in.WriteString(strings.Repeat("a b ", i%5+1) + "\n")
	}
	in.WriteString("bad \xff line\n")
	var out, attn bytes.Buffer
	m := untrainedModel(t)
	written, err := Translate(context.Background(), TranslateRequest{TextOptions: TextOptions{Decode: DecodeOptions{MaxLen: 4, Batch: 16}},
		Model: m, Input: strings.NewReader(in.String()), InputName: "in.txt", Output: &out, Attention: &attn})
	var parseErr *data.ParseError
	if !errors.As(err, &parseErr) || parseErr.Line != n+1 {
		t.Fatalf("Translate = %v, want a parse error at line %d", err, n+1)
	}
	if written != n || strings.Count(out.String(), "\n") != n {
		t.Fatalf("wrote %d sentences (%d lines), want %d", written, strings.Count(out.String(), "\n"), n)
	}
	recs := strings.Split(strings.TrimSpace(attn.String()), "\n")
	var empty map[string]json.RawMessage
	if err := json.Unmarshal([]byte(recs[7]), &empty); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"source", "output", "attention"} {
		if string(empty[k]) != "[]" {
			t.Fatalf("empty line: %s is %s, want []", k, empty[k])
		}
	}
	// Each record's source is its own input line: the order survived the windows and the length sorting.
	for i, rec := range recs {
		var tr Translation
		json.Unmarshal([]byte(rec), &tr)
		if want := 2 * (i%5 + 1); i != 7 && len(tr.Source) != want {
			t.Fatalf("record %d has %d source words, want %d", i, len(tr.Source), want)
		}
	}
}

// TestShortlistNeedsALexicon: a model without a lexicon (trained before attend learned one) refuses a shortlist
// with an error that says how to add one.
func TestShortlistNeedsALexicon(t *testing.T) {
	_, err := TranslateTokens(context.Background(), untrainedModel(t), [][]string{{"a", "b"}},
		DecodeOptions{MaxLen: 5, Batch: 4, Shortlist: &lexicon.ShortlistSize{Frequent: 10, Best: 5}})
	if err == nil || !strings.Contains(err.Error(), "attend lexicon --model") {
		t.Fatalf("TranslateTokens with a shortlist and no lexicon: %v", err)
	}
}

// TestTranslateRefusesAPrecisionTheCPUCannotDo: a precision that kernels.Choose refuses here is an error of
// Translate, naming it, and every precision it takes translates the line.
func TestTranslateRefusesAPrecisionTheCPUCannotDo(t *testing.T) {
	for _, p := range []kernels.Precision{kernels.PrecisionAuto, kernels.PrecisionFloat32, kernels.PrecisionBF16, kernels.PrecisionBF16x3} {
		_, refused := kernels.Choose(p)
		var out strings.Builder
		_, err := Translate(context.Background(), TranslateRequest{TextOptions: TextOptions{Decode: DecodeOptions{MaxLen: 5, Batch: 4, Precision: p}},
			Model: untrainedModel(t), Input: strings.NewReader("a b\n"), Output: &out})
		if (err != nil) != (refused != nil) || err != nil && !strings.Contains(err.Error(), string(p)) {
			t.Errorf("precision %s: Translate gave %v; kernels.Choose %v", p, err, refused)
		}
		if err == nil && strings.Count(out.String(), "\n") != 1 {
			t.Errorf("precision %s: %q translated", p, out.String())
		}
	}
}

// TestDecodeProgressCountsEverySentence: DecodeOptions.Progress hears of every sentence once, empty ones
// included, under greedy and beam search, and the translations are those of a search without it.
func TestDecodeProgressCountsEverySentence(t *testing.T) {
	m := untrainedModel(t)
	lines := []string{"a b c", "", "d e", "e a", "b", "", "c c d e", "a"}
	for _, beam := range []int{1, 3} {
		opts := DecodeOptions{MaxLen: 6, Batch: 2, Beam: beam}
		want, err := TranslateText(context.Background(), m, lines, TextOptions{Decode: opts, Lowercase: true})
		if err != nil {
			t.Fatal(err)
		}
		count := &countingProgress{}
		opts.Progress = count
		got, err := TranslateText(context.Background(), m, lines, TextOptions{Decode: opts, Lowercase: true})
		if err != nil {
			t.Fatal(err)
		}
		if calls, total := count.calls, int(count.total); total != len(lines) || calls < 2 {
			t.Errorf("beam %d: progress heard of %d sentences in %d calls; want %d, as they are done", beam, total, calls, len(lines))
		}
		for i := range want {
			if strings.Join(got[i].Output, " ") != strings.Join(want[i].Output, " ") {
				t.Errorf("beam %d: line %d translated to %q with progress, %q without", beam, i+1, got[i].Output, want[i].Output)
			}
		}
	}
}

// countingProgress is a Counter that adds up what it is told.
type countingProgress struct {
	mu           sync.Mutex
	calls, total int64
}

func (c *countingProgress) Add(n int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls++
	c.total += n
}
