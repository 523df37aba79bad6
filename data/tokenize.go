// Package data reads parallel corpora, tokenizes them, builds vocabularies and cuts length-bucketed, padded
// batches.
package data

import (
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Tokenizer splits one line of text into tokens.
type Tokenizer interface {
	Tokenize(line string) []string
}

// The tokenizer splits a line as Python's `\w+|[^\w\s]` does (the tokenizer of the PyTorch reference
// implementation that the speed and quality figures compare against, see docs/speed.md): runs of word characters, and single characters that are neither word characters nor
// separators. It is written out by hand (appendSpans) rather than run as a Go regular expression: the same
// tokens, several times faster, which matters on corpora of millions of lines. tokenPattern is the same rule as
// an RE2 expression; the tests check the two against each other on every code point.
//
// Python's \w is str.isalnum() or '_': a letter (L*), a number (N*) or the underscore. Combining marks (M*)
// are NOT word characters, so a decomposed "é" (e + U+0301) splits into "e" and "\u0301" exactly as Python
// splits it; the [\p{L}\p{N}_\p{M}] class suggested in the project notes would glue the mark on and differ.
// Python's \s is str.isspace(): ASCII white space including \v, the separators U+001C–U+001F, U+0085 and
// every Z* character (U+00A0 no-break space, U+202F narrow no-break space, U+2009 thin space, U+2028 …);
// Go's \s lacks all but [\t\n\f\r ], so they are listed. Checked against Python 3.11 code point by code
// point: the classes agree on every character assigned in Python's Unicode 14 (they differ only on
// characters unassigned there), and the tokens agree on every line of Multi30k (de, en, fr, cs).
var tokenPattern = regexp.MustCompile(`[\p{L}\p{N}_]+|[^\p{L}\p{N}_\s\x{0B}\x{1C}-\x{1F}\x{85}\p{Z}]`)

// asciiClass classifies the ASCII characters: classWord, classSpace or classOther.
var asciiClass = func() (c [utf8.RuneSelf]uint8) {
	for r := range rune(utf8.RuneSelf) {
		c[r] = runeClass(r)
	}
	return c
}()

const (
	classOther = iota // a token of its own
	classWord         // part of a run of word characters
	classSpace        // separates tokens and is dropped
)

// runeClass says how the tokenizer treats r: tokenPattern's classes, spelled with package unicode's tables.
func runeClass(r rune) uint8 {
	switch {
	case r == '_' || unicode.IsLetter(r) || unicode.IsNumber(r):
		return classWord
	case r == '\t' || r == '\n' || r == '\v' || r == '\f' || r == '\r' || r >= 0x1C && r <= 0x1F || r == 0x85 || unicode.Is(unicode.Z, r):
		return classSpace
	}
	return classOther
}

// appendSpans appends the [start, end) byte offsets of the tokens of line to dst, as
// tokenPattern.FindAllStringIndex would: a byte that is not valid UTF-8 is a token of its own.
func appendSpans(dst [][2]int, line string) [][2]int {
	class := func(i int) (uint8, int) {
		if b := line[i]; b < utf8.RuneSelf {
			return asciiClass[b], 1
		}
		r, size := utf8.DecodeRuneInString(line[i:])
		if r == utf8.RuneError && size == 1 {
			return classOther, 1
		}
		return runeClass(r), size
	}
	for i := 0; i < len(line); {
		c, size := class(i)
		switch c {
		case classSpace:
			i += size
		case classOther:
			dst = append(dst, [2]int{i, i + size})
			i += size
		default:
			start := i
			for i += size; i < len(line); i += size {
				if c, size = class(i); c != classWord {
					break
				}
			}
			dst = append(dst, [2]int{start, i})
		}
	}
	return dst
}

// RegexTokenizer optionally lowercases a line, then splits it into runs of word characters (letters, digits,
// underscore) and single other non-space characters, as the PyTorch reference implementation does with
// re.findall(r"\w+|[^\w\s]", line.lower()). White space only separates tokens, so leading and trailing white
// space does not matter. The zero value does not lowercase.
//
// Lowercasing is strings.ToLower, Unicode's simple case mapping. It differs from Python's str.lower in two
// places only: "İ" (U+0130) becomes "i", where Python gives "i" + U+0307, and a word-final "Σ" becomes "σ",
// where Python gives "ς".
//
// With KeepBPEMarkers, text already split into subwords keeps its "@@" markers: when a run of characters
// without white space ends in "@@" after at least one other token, the marker stays on the token before it
// ("unter@@ halten" gives "unter@@", "halten", where the plain pattern gives "unter", "@", "@", "halten"). An
// "@@" standing alone, or inside a run, is split as punctuation as usual.
type RegexTokenizer struct {
	Lowercase      bool // lowercase the line before splitting it
	KeepBPEMarkers bool // keep subword-nmt's "@@" on the token it ends
}

// WhitespaceTokenizer splits a line on white space only, for text that is already tokenized (as gold word
// alignments and fast_align expect): the tokens are the line's white-space separated fields (strings.Fields,
// Unicode's White_Space), so "Mr." stays one token. It optionally lowercases them. The zero value does not.
type WhitespaceTokenizer struct {
	Lowercase bool // lowercase the line before splitting it
}

// Tokenize returns the white-space separated fields of line, nil when it has none.
func (t WhitespaceTokenizer) Tokenize(line string) []string {
	if t.Lowercase {
		line = strings.ToLower(line)
	}
	fields := strings.Fields(line)
	if len(fields) == 0 {
		return nil
	}
	return fields
}

// NewRegexTokenizer returns a tokenizer that lowercases when lowercase is true.
func NewRegexTokenizer(lowercase bool) *RegexTokenizer { return &RegexTokenizer{Lowercase: lowercase} }

// Tokenize returns the tokens of line, nil when it has none.
func (t *RegexTokenizer) Tokenize(line string) []string {
	tokens := t.AppendTokens(nil, line)
	if len(tokens) == 0 {
		return nil
	}
	return tokens
}

// AppendTokens appends the tokens of line to dst and returns it: Tokenize without a new slice for every line.
// The tokens are substrings of line (or of its lowercased copy).
func (t *RegexTokenizer) AppendTokens(dst []string, line string) []string {
	if t.Lowercase {
		line = strings.ToLower(line)
	}
	var buf [64][2]int
	spans := appendSpans(buf[:0], line)
	if !t.KeepBPEMarkers || !strings.Contains(line, BPEMarker) {
		for _, sp := range spans {
			dst = append(dst, line[sp[0]:sp[1]])
		}
		return dst
	}
	for i := 0; i < len(spans); i++ {
		// Tokens touch when no white space lies between them: every other character is in some token.
		touches := func(a, b int) bool { return spans[a][1] == spans[b][0] }
		if i+2 < len(spans) && touches(i, i+1) && touches(i+1, i+2) &&
			line[spans[i+1][0]:spans[i+2][1]] == BPEMarker && (i+3 == len(spans) || !touches(i+2, i+3)) {
			dst = append(dst, line[spans[i][0]:spans[i+2][1]])
			i += 2
			continue
		}
		dst = append(dst, line[spans[i][0]:spans[i][1]])
	}
	return dst
}
