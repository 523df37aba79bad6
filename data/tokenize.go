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

// tokenPattern is Python's `\w+|[^\w\s]` (../shared/BENCHMARK.md) spelled for Go's RE2, whose \w is ASCII only:
// a run of Unicode letters, combining marks, digits or underscores, or one symbol that is neither such a
// character nor white space.
var tokenPattern = regexp.MustCompile(`[\p{L}\p{M}\p{N}_]+|[^\p{L}\p{M}\p{N}_\s]`)

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
