package serve

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/attend-nmt/attend/align"
	"github.com/attend-nmt/attend/app"
	"github.com/attend-nmt/attend/data"
)

// TestSourceWordsGroupTokensByWhiteSpace: punctuation and apostrophes stay with their white-space word, every
// separator the tokenizer knows separates (tab, no-break space, U+001F), and the words keep their case.
func TestSourceWordsGroupTokensByWhiteSpace(t *testing.T) {
	tok := data.NewRegexTokenizer(true)
	for _, c := range []struct {
		text   string
		words  []string
		wordOf []int
	}{
		{"Ein Mann, der (schnell) läuft.", []string{"Ein", "Mann,", "der", "(schnell)", "läuft."}, []int{0, 1, 1, 2, 3, 3, 3, 4, 4}},
		{"  l'homme\tdort\u00a0bien\x1fici  ", []string{"l'homme", "dort", "bien", "ici"}, []int{0, 0, 0, 1, 2, 3}},
		{"日本語 テキスト。", []string{"日本語", "テキスト。"}, []int{0, 1, 1}},
		{"", nil, nil},
	} {
		tokens := tok.Tokenize(c.text)
		words, wordOf := sourceWords(tok, c.text, nonNil(tokens))
		if !slices.Equal(words, c.words) || !slices.Equal(wordOf, c.wordOf) {
			t.Fatalf("%q (tokens %q): words %q %v, want %q %v", c.text, tokens, words, wordOf, c.words, c.wordOf)
		}
	}
	// Tokens that do not come from the text (another tokenizer): each its own word.
	words, wordOf := sourceWords(tok, "a b", []string{"x", "y", "z"})
	if !slices.Equal(words, []string{"x", "y", "z"}) || !slices.Equal(wordOf, []int{0, 1, 2}) {
		t.Fatalf("mismatched tokens: %q %v", words, wordOf)
	}
}

// TestOutputWordsFollowDetokenize: the words are those of the detokenized text, each token in the word its
// characters end up in.
func TestOutputWordsFollowDetokenize(t *testing.T) {
	for _, c := range []struct {
		tokens []string
		text   string
		words  []string
		wordOf []int
	}{
		{[]string{"a", "man", "'", "s", "t", "-", "shirt", "(", "red", ")", "."}, "a man's t-shirt (red).",
			[]string{"a", "man's", "t-shirt", "(red)."}, []int{0, 1, 1, 1, 2, 2, 2, 3, 3, 3, 3}},
		{[]string{"he", "said", "\"", "hi", "\"", "."}, `he said "hi".`, []string{"he", "said", `"hi".`}, []int{0, 1, 2, 2, 2, 2}},
		{[]string{}, "", []string{}, []int{}},
	} {
		text, words, wordOf := outputWords(c.tokens)
		if text != c.text || !slices.Equal(words, c.words) || !slices.Equal(wordOf, c.wordOf) {
			t.Fatalf("%q: %q %q %v, want %q %q %v", c.tokens, text, words, wordOf, c.text, c.words, c.wordOf)
		}
	}
}

// TestWordAttentionSumsColumnsAndAveragesRows checks the white-space word view of a translation by hand: a
// source word's column is the sum of its tokens', an output word's row the mean of its tokens', the </s> row
// stays last, rows still sum to one, and links join the words of linked tokens, once each.
func TestWordAttentionSumsColumnsAndAveragesRows(t *testing.T) {
	tok := data.NewRegexTokenizer(true)
	input := "Der Hund, bellt"
	tr := app.Translation{
		Source: tok.Tokenize(input),                  // der hund , bellt
		Output: []string{"the", "dog", "barks", "."}, // "the dog barks."
		Attention: [][]float32{
			{0.7, 0.1, 0.1, 0.1},
			{0.1, 0.6, 0.2, 0.1},
			{0.0, 0.1, 0.1, 0.8},
			{0.0, 0.2, 0.6, 0.2},
			{0.1, 0.1, 0.1, 0.7}, // </s>
		},
	}
	v := newWordView(tok, input, tr)
	if v.text != "the dog barks." || !slices.Equal(v.source, []string{"Der", "Hund,", "bellt"}) ||
		!slices.Equal(v.output, []string{"the", "dog", "barks."}) {
		t.Fatalf("view %+v", v)
	}
	got := v.attention(tr)
	want := [][]float32{
		{0.7, 0.2, 0.1},
		{0.1, 0.8, 0.1},
		{0.0, 0.5, 0.5}, // barks and . averaged: (0.1+0.1+0.2+0.6)/2, (0.8+0.2)/2
		{0.1, 0.2, 0.7},
	}
	for r := range want {
		sum := float32(0)
		for c := range want[r] {
			if math.Abs(float64(got[r][c]-want[r][c])) > 1e-6 {
				t.Fatalf("word attention\n%v\nwant\n%v", got, want)
			}
			sum += got[r][c]
		}
		if math.Abs(float64(sum-1)) > 1e-6 {
			t.Fatalf("row %d sums to %v", r, sum)
		}
	}
	// Token links by argmax: the-der, dog-hund, barks-bellt, .-, → words: 0-0 1-1 2-2 1-2 (Hund, ← barks.).
	if got, want := fmt.Sprint(v.links(tr, 0)), fmt.Sprint([]align.Link{{Src: 0, Tgt: 0}, {Src: 1, Tgt: 1}, {Src: 1, Tgt: 2}, {Src: 2, Tgt: 2}}); got != want {
		t.Fatalf("links %s, want %s", got, want)
	}
}
