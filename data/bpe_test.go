package data

import (
	"bytes"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"
)

// The corpus of Sennrich et al. (2016): low ×5, lower ×2, newest ×6, widest ×3.
func sennrichCorpus() [][]string {
	var sents [][]string
	for word, n := range map[string]int{"low": 5, "lower": 2, "newest": 6, "widest": 3} {
		for i := 0; i < n; i++ {
			sents = append(sents, []string{word})
		}
	}
	return sents
}

// By hand: e+s and s+t</w> both occur 9 times (e sorts first), then es+t</w> 9 times, then l+o 7 times, then
// e+w, n+e and w+est</w> 6 times each (e sorts first).
func TestLearnBPEHandComputed(t *testing.T) {
	b := LearnBPE(sennrichCorpus(), 4)
	want := [][2]string{{"e", "s"}, {"es", "t</w>"}, {"l", "o"}, {"e", "w"}}
	if !slices.Equal(b.Merges, want) {
		t.Fatalf("merges %q, want %q", b.Merges, want)
	}
	if got := LearnBPE(sennrichCorpus(), 1000); len(got.Merges) >= 1000 {
		t.Fatalf("%d merges: learning should stop when no pair occurs twice", len(got.Merges))
	}
}

func TestSegmentAppliesMergesInOrder(t *testing.T) {
	b := &BPE{Merges: [][2]string{{"e", "s"}, {"es", "t</w>"}, {"l", "o"}}}
	tests := []struct{ word, want string }{
		{"lowest", "lo@@ w@@ est"},
		{"lo", "l@@ o"}, // l+o does not join l+o</w>
		{"est", "est"},
		{"estate", "es@@ t@@ a@@ t@@ e"}, // est</w> only merges at the end of a word
		{"x", "x"},
	}
	for _, tt := range tests {
		if got := strings.Join(b.Segment(tt.word), " "); got != tt.want {
			t.Errorf("Segment(%q) = %q, want %q", tt.word, got, tt.want)
		}
	}
}

// TestBPERoundTrip: applying learned merges then undoing them gives the input back, on hand-made sentences and
// on Multi30k when it is there; and the merges survive writing and reading.
func TestBPERoundTrip(t *testing.T) {
	sents := [][]string{strings.Fields("a man in an orange hat starring at something ."), strings.Fields("x y z"), {}}
	if raw, err := os.ReadFile("../../shared/data/multi30k/train.de"); err == nil {
		tok := NewRegexTokenizer(true)
		for _, line := range strings.Split(string(raw), "\n")[:3000] {
			sents = append(sents, tok.Tokenize(line))
		}
	}
	b := LearnBPE(sents, 300)
	var file bytes.Buffer
	if _, err := b.WriteTo(&file); err != nil {
		t.Fatal(err)
	}
	read, err := ReadBPE(&file, "codes")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(read.Merges, b.Merges) {
		t.Fatal("merges changed through the file")
	}
	split := 0
	for _, s := range sents {
		pieces := read.Apply(s)
		if len(pieces) > len(s) {
			split++
		}
		if back := UndoBPE(pieces); !slices.Equal(back, s) && !(len(s) == 0 && len(back) == 0) {
			t.Fatalf("%q → %q → %q", s, pieces, back)
		}
	}
	if split == 0 {
		t.Fatal("no sentence had a word split: the round trip tested nothing")
	}
}

func TestReadBPERejectsBadLines(t *testing.T) {
	_, err := ReadBPE(strings.NewReader("#version: 0.2\na b\nabc\n"), "codes.txt")
	var pe *ParseError
	if !errors.As(err, &pe) || pe.Line != 3 || !errors.Is(err, ErrBadMerge) {
		t.Fatalf("got %v, want a ParseError at line 3", err)
	}
}
