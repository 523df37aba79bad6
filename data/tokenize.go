// Package data reads parallel corpora, tokenizes them, builds vocabularies and cuts length-bucketed, padded
// batches.
package data

import (
	"regexp"
	"strings"
)

// Tokenizer splits one line of text into tokens.
type Tokenizer interface {
	Tokenize(line string) []string
}

// tokenPattern is Python's `\w+|[^\w\s]` (../shared/BENCHMARK.md) spelled for Go's RE2, whose \w and \s are
// ASCII only. Python's \w is a letter (L*), a number (N*) or '_' — combining marks are not word characters, so
// a decomposed "é" splits as Python splits it — and Python's \s is every str.isspace character: ASCII white
// space, the separators U+001C–U+001F and U+0085, and the Unicode space separators (Z*), such as the no-break
// space U+00A0 found in Multi30k.
var tokenPattern = regexp.MustCompile(`[\p{L}\p{N}_]+|[^\p{L}\p{N}_\s\x{0B}\x{1C}-\x{1F}\x{85}\p{Z}]`)

// RegexTokenizer lowercases (optionally) and splits a line into word runs and single symbols, as the PyTorch
// peer does. The zero value does not lowercase.
type RegexTokenizer struct {
	Lowercase bool
}

// NewRegexTokenizer returns a tokenizer that lowercases when lowercase is true.
func NewRegexTokenizer(lowercase bool) *RegexTokenizer { return &RegexTokenizer{Lowercase: lowercase} }

// Tokenize returns the tokens of line; white space only separates them.
func (t *RegexTokenizer) Tokenize(line string) []string {
	if t.Lowercase {
		line = strings.ToLower(line)
	}
	return tokenPattern.FindAllString(line, -1)
}
