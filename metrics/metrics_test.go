package metrics

import (
	"math"
	"os"
	"strings"
	"testing"
)

// tokens splits each line on spaces.
func tokens(lines ...string) [][]string {
	out := make([][]string, len(lines))
	for i, line := range lines {
		out[i] = strings.Fields(line)
	}
	return out
}

// readTokens reads a testdata file of space-separated sentences, one per line.
func readTokens(t *testing.T, path string) [][]string {
	t.Helper()
	content, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return tokens(strings.Split(strings.TrimSuffix(string(content), "\n"), "\n")...)
}

// The expected BLEU figures below were computed by running the BLEU function of the PyTorch reference
// implementation (see metrics.BLEU) on the same token lists (Python repr of the float).
func TestBLEUMatchesPyTorchReference(t *testing.T) {
	tests := []struct {
		name       string
		hyps, refs [][]string
		want       float64
	}{
		{"perfect match is 100",
			tokens("the cat sat on the mat", "a dog ran away quickly"),
			tokens("the cat sat on the mat", "a dog ran away quickly"),
			100},
		{"no matching 4-gram is 0",
			tokens("a b c d e"), tokens("a b c e d"), 0},
		{"short hypothesis takes the brevity penalty",
			tokens("the cat sat on the"), tokens("the cat sat on the mat"), 81.87307530779819},
		{"long hypothesis has no brevity penalty",
			tokens("the cat sat on the mat today"), tokens("the cat sat on the mat"), 80.91067115702212},
		{"repeated n-grams are clipped to the reference count",
			tokens("a b c d a b c d"), tokens("a b c d e f"), 34.5720784641941},
		{"counts pool over a multi-sentence corpus with an empty hypothesis",
			tokens("the big dog saw a small cat", "der hund groter sehet", "a b c d e f g", ""),
			tokens("the big dog saw the small cat quickly", "der hund groter eine katze sehet",
				"a b x d e f g h", "some words here"),
			32.80505855135714},
		{"hypotheses shorter than 4 tokens give 0",
			tokens("a b c", "d e"), tokens("a b c", "d e"), 0},
		{"empty corpus gives 0", nil, nil, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := BLEU(tt.hyps, tt.refs); math.Abs(got-tt.want) > 1e-9 {
				t.Errorf("BLEU = %.17g, want %.17g", got, tt.want)
			}
		})
	}
}

func TestBLEUMatchesPyTorchReferenceOnFixtureCorpus(t *testing.T) {
	hyps := readTokens(t, "testdata/bleu_hyps.txt")
	refs := readTokens(t, "testdata/bleu_refs.txt")
	if len(hyps) != 40 || len(refs) != 40 {
		t.Fatalf("fixture has %d hypotheses and %d references, want 40", len(hyps), len(refs))
	}
	tests := []struct {
		name string
		n    int
		want float64
	}{
		{"all 40 sentences, equal total lengths", 40, 72.6288602016086},
		{"first 10 sentences, 72 against 74 tokens", 10, 53.00420922456493},
	}
	for _, tt := range tests {
		if got := BLEU(hyps[:tt.n], refs[:tt.n]); math.Abs(got-tt.want) > 1e-9 {
			t.Errorf("%s: BLEU = %.17g, want %.17g", tt.name, got, tt.want)
		}
	}
}

func TestBLEUPanicsOnCorpusLengthMismatch(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("BLEU of 2 hypotheses against 1 reference did not panic")
		}
	}()
	BLEU(tokens("a b c d", "a b c d"), tokens("a b c d"))
}

func TestExactMatchCountsIdenticalSentences(t *testing.T) {
	tests := []struct {
		name       string
		hyps, refs [][]string
		want       float64
	}{
		{"all equal", tokens("a b", "c"), tokens("a b", "c"), 1},
		{"one of four equal", tokens("a b", "a b c", "c", "d e"), tokens("a b", "a b", "d", "e d"), 0.25},
		{"prefix is not a match", tokens("a b"), tokens("a b c"), 0},
		{"empty hypothesis matches empty reference", tokens("", "x"), tokens("", "y"), 0.5},
		{"empty corpus", nil, nil, 0},
	}
	for _, tt := range tests {
		if got := ExactMatch(tt.hyps, tt.refs); got != tt.want {
			t.Errorf("%s: ExactMatch = %v, want %v", tt.name, got, tt.want)
		}
	}
}
