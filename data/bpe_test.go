package data

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/attend-nmt/attend/internal/corpora"
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

// TestBPERoundTrip: applying learned merges then undoing them gives the input back, and the merges survive
// writing and reading; on hand-made sentences, and in a subtest on Multi30k's German training side (skipped
// without MULTI30K).
func TestBPERoundTrip(t *testing.T) {
	bpeRoundTrip(t, [][]string{strings.Fields("a man in an orange hat starring at something ."), strings.Fields("x y z"), {}}, 20)
	t.Run("Multi30k", func(t *testing.T) {
		raw, err := os.ReadFile(filepath.Join(corpora.Multi30k(t, "train.de"), "train.de"))
		if err != nil {
			t.Fatal(err)
		}
		var sents [][]string
		tok := NewRegexTokenizer(true)
		for _, line := range strings.Split(string(raw), "\n")[:3000] {
			sents = append(sents, tok.Tokenize(line))
		}
		bpeRoundTrip(t, sents, 300)
	})
}

// bpeRoundTrip learns merges from sents, writes and reads them, and checks that applying them to every sentence
// and undoing that gives the sentence back, and that some sentence had a word split.
func bpeRoundTrip(t *testing.T, sents [][]string, merges int) {
	t.Helper()
	b := LearnBPE(sents, merges)
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
		pieces, _ := read.Split(s)
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

// learnBPERecount is the obvious learner LearnBPE is checked against: after every merge it counts every pair
// of every word again.
func learnBPERecount(sents [][]string, merges int) [][2]string {
	counts := map[string]int{}
	for _, s := range sents {
		for _, w := range s {
			counts[w]++
		}
	}
	var words []wordSymbols
	for w, n := range counts {
		words = append(words, wordSymbols{symbols: splitWord(w), count: n})
	}
	var out [][2]string
	for len(out) < merges {
		pairs := map[[2]string]int{}
		for _, w := range words {
			for i := 0; i+1 < len(w.symbols); i++ {
				pairs[[2]string{w.symbols[i], w.symbols[i+1]}] += w.count
			}
		}
		var best [2]string
		bestCount := 0
		for p, n := range pairs {
			if n > bestCount || n == bestCount && (p[0] < best[0] || p[0] == best[0] && p[1] < best[1]) {
				best, bestCount = p, n
			}
		}
		if bestCount < 2 {
			break
		}
		out = append(out, best)
		for i := range words {
			words[i].symbols = mergePair(words[i].symbols, best)
		}
	}
	return out
}

// TestLearnBPEMatchesRecounting compares the incremental learner with learnBPERecount, merge by merge, on
// seeded corpora of made-up words built from few syllables (so that pairs compete and tie often), with
// repeated letters ("aaaa", where one merge changes overlapping pairs), until no pair occurs twice.
func TestLearnBPEMatchesRecounting(t *testing.T) {
	syllables := strings.Fields("a aa ab ba an na er re en ne st ts ing ung über ä ß e s")
	for seed := uint64(1); seed <= 4; seed++ {
		rng := rand.New(rand.NewPCG(seed, 0))
		var sents [][]string
		for range 150 {
			var s []string
			for range 1 + rng.IntN(6) {
				var w strings.Builder
				for range 1 + rng.IntN(4) {
					w.WriteString(syllables[rng.IntN(1+rng.IntN(len(syllables)))]) // skewed: early syllables more often
				}
				s = append(s, w.String())
			}
			sents = append(sents, s)
		}
		want := learnBPERecount(sents, 1000)
		got := LearnBPE(sents, 1000).Merges
		if len(want) < 20 {
			t.Fatalf("seed %d: only %d merges: the corpus tests little", seed, len(want))
		}
		if !slices.Equal(got, want) {
			for i := range min(len(got), len(want)) {
				if got[i] != want[i] {
					t.Fatalf("seed %d: merge %d is %q, recounting gives %q", seed, i, got[i], want[i])
				}
			}
			t.Fatalf("seed %d: %d merges, recounting gives %d", seed, len(got), len(want))
		}
		if fewer := LearnBPE(sents, 7).Merges; !slices.Equal(fewer, want[:7]) {
			t.Fatalf("seed %d: the first 7 merges %q, want %q", seed, fewer, want[:7])
		}
	}
}

// TestSplitAndJoinSayWhichWordEachSubwordIsOf: Split's and JoinSubwords' word indices agree, and JoinSubwords
// handles what a model may write but Segment never does.
func TestSplitAndJoinSayWhichWordEachSubwordIsOf(t *testing.T) {
	b := &BPE{Merges: [][2]string{{"e", "s"}, {"es", "t</w>"}, {"l", "o"}}}
	pieces, wordOf := b.Split(strings.Fields("lowest x lo"))
	if want := strings.Fields("lo@@ w@@ est x l@@ o"); !slices.Equal(pieces, want) {
		t.Fatalf("pieces %q, want %q", pieces, want)
	}
	if want := []int{0, 0, 0, 1, 2, 2}; !slices.Equal(wordOf, want) {
		t.Fatalf("word of each subword %v, want %v", wordOf, want)
	}
	if words, joined := JoinSubwords(pieces); !slices.Equal(words, strings.Fields("lowest x lo")) || !slices.Equal(joined, wordOf) {
		t.Fatalf("JoinSubwords gives %q %v", words, joined)
	}
	cases := []struct {
		pieces string
		words  []string
		wordOf []int
	}{
		{"", nil, []int{}},
		{"a@@", []string{"a"}, []int{0}},                 // a marked last subword still makes a word
		{"a b@@ @@", []string{"a", "b"}, []int{0, 1, 1}}, // an empty subword adds nothing
		{"@@ a", []string{"a"}, []int{0, 0}},
		{"@@", nil, []int{-1}}, // nothing but an empty subword makes no word
	}
	for _, c := range cases {
		words, wordOf := JoinSubwords(strings.Fields(c.pieces))
		if !slices.Equal(words, c.words) || !slices.Equal(wordOf, c.wordOf) {
			t.Errorf("JoinSubwords(%q) = %q %v, want %q %v", c.pieces, words, wordOf, c.words, c.wordOf)
		}
	}
	sents := [][]string{strings.Fields("lowest lo lowest"), nil, {}, strings.Fields("x est")}
	all := b.ApplyAll(sents)
	for i, s := range sents {
		if want, _ := b.Split(s); !slices.Equal(all[i], want) || (s == nil) != (all[i] == nil) {
			t.Errorf("ApplyAll sentence %d = %q, Split gives %q", i, all[i], want)
		}
	}
}

// BenchmarkLearnBPE learns 2000 merges from 20,000 sentences of made-up words (about Multi30k's German side in
// distinct words).
func BenchmarkLearnBPE(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 0))
	syllables := strings.Fields("ein der die das mann frau kind hund spiel ball straße haus rot blau groß klein en er st ung lich keit")
	sents := make([][]string, 20000)
	for i := range sents {
		for range 5 + rng.IntN(10) {
			var w strings.Builder
			for range 1 + rng.IntN(4) {
				w.WriteString(syllables[rng.IntN(1+rng.IntN(len(syllables)))])
			}
			sents[i] = append(sents[i], w.String())
		}
	}
	b.ResetTimer()
	for range b.N {
		LearnBPE(sents, 2000)
	}
}
