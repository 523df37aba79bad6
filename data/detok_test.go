package data

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/attend-nmt/attend/internal/corpora"
)

func TestDetokenizeHandMadeCases(t *testing.T) {
	tests := []struct{ name, tokens, want string }{
		{"no space before punctuation", "a man is sitting , reading a book .", "a man is sitting, reading a book."},
		{"contraction", "he doesn ' t know", "he doesn't know"},
		{"possessive", "the man ' s dog", "the man's dog"},
		{"plural possessive", "the dogs ' toys", "the dogs' toys"},
		{"single quotes around a word", "a sign saying ' stop '", "a sign saying 'stop'"},
		{"double quotes alternate", `he said " hello " and left`, `he said "hello" and left`},
		{"brackets", "a dog ( brown ) runs", "a dog (brown) runs"},
		{"hyphenated word", "a man in a t - shirt", "a man in a t-shirt"},
		{"a dash between spaces stays spaced when not between words", "wait - !", "wait -!"},
		{"decimal number", "it costs $ 3 . 50 !", "it costs $3.50!"},
		{"thousands and time", "1 , 000 people at 10 : 30", "1,000 people at 10:30"},
		{"question and exclamation", "why ? no !", "why? no!"},
		{"ellipsis", "well . . . yes", "well... yes"},
		{"slash between words", "and / or", "and/or"},
		{"case is kept", "Two Men", "Two Men"},
		{"empty", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Detokenize(strings.Fields(tt.tokens)); got != tt.want {
				t.Fatalf("Detokenize(%q) = %q, want %q", tt.tokens, got, tt.want)
			}
		})
	}
}

// TestDetokenizeTokenizesBack: the regex tokenizer splits detokenized text into the tokens it came from, on
// hand-made lines, and in a subtest on every line of the Multi30k English test set (skipped without MULTI30K).
func TestDetokenizeTokenizesBack(t *testing.T) {
	detokenizeTokenizesBack(t, []string{`A man's "big" hat (red), 3.5 m - wide; isn't it?`, "' quoted ' words ' here", "l'homme / la femme : 10:30"})
	t.Run("Multi30k", func(t *testing.T) {
		raw, err := os.ReadFile(filepath.Join(corpora.Multi30k(t, "test_2016_flickr.en"), "test_2016_flickr.en"))
		if err != nil {
			t.Fatal(err)
		}
		detokenizeTokenizesBack(t, strings.Split(strings.TrimSpace(string(raw)), "\n"))
	})
}

// detokenizeTokenizesBack checks, for each line, that tokenizing its detokenized tokens gives the tokens again.
func detokenizeTokenizesBack(t *testing.T, lines []string) {
	t.Helper()
	tok := NewRegexTokenizer(true)
	for _, line := range lines {
		tokens := tok.Tokenize(line)
		if back := tok.Tokenize(Detokenize(tokens)); !slices.Equal(back, tokens) {
			t.Fatalf("%q: detokenized %q, tokens again %q", line, Detokenize(tokens), back)
		}
	}
}

// TestDetokenizeWordsSaysWhereEachTokenWent: the words are the white-space words of Detokenize's text, and each
// token is in the word it was glued into.
func TestDetokenizeWordsSaysWhereEachTokenWent(t *testing.T) {
	tests := []struct {
		tokens, words string
		wordOf        []int
	}{
		{"mr . smith doesn ' t know l ' homme .", "mr. smith doesn't know l'homme.", []int{0, 0, 1, 2, 2, 2, 3, 4, 4, 4, 4}},
		{`he said " hi ( there ) "`, `he said "hi (there)"`, []int{0, 1, 2, 2, 3, 3, 3, 3}},
		{". a", ". a", []int{0, 1}},
		{"it costs $ 3 . 50 !", "it costs $3.50!", []int{0, 1, 2, 2, 2, 2, 2}},
		{"", "", []int{}},
	}
	for _, tt := range tests {
		words, wordOf := DetokenizeWords(strings.Fields(tt.tokens))
		if !slices.Equal(words, strings.Fields(tt.words)) || !slices.Equal(wordOf, tt.wordOf) {
			t.Errorf("DetokenizeWords(%q) = %q %v, want %q %v", tt.tokens, words, wordOf, tt.words, tt.wordOf)
		}
		if text := Detokenize(strings.Fields(tt.tokens)); text != strings.Join(words, " ") {
			t.Errorf("Detokenize(%q) = %q, the words joined %q", tt.tokens, text, strings.Join(words, " "))
		}
	}
	// Empty tokens add no word: they join the word before them, or the first.
	words, wordOf := DetokenizeWords([]string{"", "a", "", "b", "."})
	if !slices.Equal(words, []string{"a", "b."}) || !slices.Equal(wordOf, []int{0, 0, 0, 1, 1}) {
		t.Errorf("with empty tokens: %q %v", words, wordOf)
	}
	if words, wordOf := DetokenizeWords([]string{""}); len(words) != 0 || !slices.Equal(wordOf, []int{-1}) {
		t.Errorf("one empty token: %q %v", words, wordOf)
	}
}
