package data

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Detokenize joins tokens into readable text: words are separated by spaces, but there is no space before
// closing punctuation (. , ! ? ; : ) ] } % …) nor after opening brackets and currency signs (( [ { $ £ € ¿ ¡);
// an apostrophe before a contraction suffix or after an elided word joins the words ("don ' t" → "don't",
// "man ' s" → "man's", "l ' homme" → "l'homme"), one that ends a quotation or follows a word in s (a plural
// possessive: "dogs '" → "dogs'") attaches to the word before, and any other opens a quotation; double quotes alternate between opening
// and closing; a hyphen or slash between two words joins them ("t - shirt" → "t-shirt"), as does a period,
// comma or colon between two numbers ("3 . 5" → "3.5").
//
// It only ever removes spaces next to a symbol, never between two words, so the RegexTokenizer splits its
// result back into the same tokens. Case is untouched: the output of a model trained on lowercased text stays
// lowercase.
func Detokenize(tokens []string) string {
	words, _ := DetokenizeWords(tokens)
	return strings.Join(words, " ")
}

// DetokenizeWords is Detokenize that returns the words of the text instead of the text: the white-space
// separated words of Detokenize(tokens), which is the words joined by single spaces, and for each token the
// index of the word it went into ("don ' t" all go into "don't", "dog ." into "dog."). An empty token joins the
// word before it (the first word when it comes first; -1 when no token has text). Tokens are assumed to hold no
// white space, as the RegexTokenizer's never do.
func DetokenizeWords(tokens []string) (words []string, wordOf []int) {
	wordOf = make([]int, len(tokens))
	var word strings.Builder
	glueNext := true // no space before the next token
	quoteOpen, singleOpen := false, false
	for i, tok := range tokens {
		space := !glueNext
		glueNext = false
		prevWord := i > 0 && isWordToken(tokens[i-1])
		nextWord := i+1 < len(tokens) && isWordToken(tokens[i+1])
		switch {
		case tok == `"`:
			if quoteOpen {
				space = false
			} else {
				glueNext = true
			}
			quoteOpen = !quoteOpen
		case tok == "'" || tok == "’":
			switch {
			case prevWord && nextWord && (isContraction(tokens[i+1]) || isElision(tokens[i-1])):
				space, glueNext = false, true
			case singleOpen: // the closing quote
				space, singleOpen = false, false
			case prevWord && (!nextWord || strings.HasSuffix(tokens[i-1], "s")): // a plural possessive
				space = false
			default:
				glueNext, singleOpen = true, true
			}
		case (tok == "-" || tok == "/") && prevWord && nextWord:
			space, glueNext = false, true
		case (tok == "." || tok == "," || tok == ":") && i > 0 && isNumber(tokens[i-1]) && i+1 < len(tokens) && isNumber(tokens[i+1]):
			space, glueNext = false, true
		case strings.Contains(closingPunct, tok) && utf8.RuneCountInString(tok) == 1:
			space = false
		case strings.Contains(openingPunct, tok) && utf8.RuneCountInString(tok) == 1:
			glueNext = true
		}
		// A word ends before a spaced token, once it holds something.
		if space && tok != "" && word.Len() > 0 {
			words = append(words, word.String())
			word.Reset()
		}
		word.WriteString(tok)
		wordOf[i] = len(words)
	}
	if word.Len() > 0 {
		words = append(words, word.String())
	}
	// Empty tokens before any text belong to the first word; with no text at all there is no word.
	for i := range wordOf {
		if wordOf[i] >= len(words) {
			wordOf[i] = len(words) - 1
		}
	}
	return words, wordOf
}

// Single-character tokens that take no space before them, and those that take none after them.
const (
	closingPunct = ".,!?;:)]}%…"
	openingPunct = "([{$£€¿¡"
)

// isContraction reports whether an apostrophe joins word to the word before it ("don't", "man's", "we're").
func isContraction(word string) bool {
	switch strings.ToLower(word) {
	case "s", "t", "re", "ve", "ll", "d", "m":
		return true
	}
	return false
}

// isElision reports whether an apostrophe joins word to the word after it ("l'homme", "o'clock").
func isElision(word string) bool {
	switch strings.ToLower(word) {
	case "l", "d", "j", "qu", "c", "n", "s", "m", "t", "o":
		return true
	}
	return false
}

// isWordToken reports whether tok starts with a word character (letter, digit or underscore), as the tokens
// of the RegexTokenizer's \w+ alternative do.
func isWordToken(tok string) bool {
	r, _ := utf8.DecodeRuneInString(tok)
	return runeClass(r) == classWord
}

// isNumber reports whether tok is all digits.
func isNumber(tok string) bool {
	if tok == "" {
		return false
	}
	for _, r := range tok {
		if !unicode.IsDigit(r) {
			return false
		}
	}
	return true
}
