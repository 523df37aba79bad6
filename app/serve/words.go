package serve

import (
	"slices"
	"strings"
	"unicode"

	"github.com/attend-nmt/attend/align"
	"github.com/attend-nmt/attend/app"
	"github.com/attend-nmt/attend/data"
)

// The page and the API speak of the words of the text as a person wrote or reads it: its white-space words,
// "Fahrrad." rather than the tokens "fahrrad" and "." that the model reads. Tokens never span white space, so
// every token lies in one white-space word, and attention between tokens becomes attention between white-space
// words as translate brings subwords to words (app.WordAttention): a source word's column is the sum of its
// tokens' columns (the attention the word got is what its pieces got together), an output word's row the mean of
// its tokens' rows (what the word looked at is the average of what its pieces looked at), so rows still sum to
// one. Links are brought to words as OpenNMT-py brings subword links to words: two words are linked when any of
// their tokens are.

// isSeparator reports whether r separates tokens for data.RegexTokenizer: Python's str.isspace, which is Go's
// unicode.IsSpace plus the separators U+001C–U+001F and every Z* character.
func isSeparator(r rune) bool {
	return unicode.IsSpace(r) || unicode.In(r, unicode.Z) || r >= 0x1C && r <= 0x1F
}

// sourceWords splits text into its white-space words and gives the word of each of its tokens, tokens being
// tok.Tokenize(text). Each word is tokenized alone; should that ever give other tokens than the whole line
// does, every token is taken for a word of its own.
func sourceWords(tok data.Tokenizer, text string, tokens []string) (words []string, wordOf []int) {
	words = []string{}
	var joined []string
	for _, field := range strings.FieldsFunc(text, isSeparator) {
		pieces := tok.Tokenize(field)
		if len(pieces) == 0 {
			continue
		}
		for range pieces {
			wordOf = append(wordOf, len(words))
		}
		joined = append(joined, pieces...)
		words = append(words, field)
	}
	if !slices.Equal(joined, tokens) {
		wordOf = make([]int, len(tokens))
		for i := range wordOf {
			wordOf[i] = i
		}
		return slices.Clone(tokens), wordOf
	}
	return words, wordOf
}

// outputWords is the translation's text (data.Detokenize of its tokens), its white-space words, and the word of
// each token: data.DetokenizeWords, whose words Detokenize joins by spaces.
func outputWords(tokens []string) (text string, words []string, wordOf []int) {
	words, wordOf = data.DetokenizeWords(tokens)
	return strings.Join(words, " "), nonNil(words), wordOf
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// wordView is a translation in the white-space words of its input and output.
type wordView struct {
	text               string   // the translation, detokenized
	source, output     []string // white-space words
	srcWordOf, outWord []int    // the word of each source and output token
}

func newWordView(tok data.Tokenizer, input string, tr app.Translation) wordView {
	var v wordView
	v.source, v.srcWordOf = sourceWords(tok, input, tr.Source)
	v.text, v.output, v.outWord = outputWords(tr.Output)
	return v
}

// attention is the translation's attention between white-space words: one row per output word, then one for
// </s> when the model ended the translation, one column per source word.
func (v wordView) attention(tr app.Translation) [][]float32 {
	return app.WordAttention(tr.Attention, v.srcWordOf, len(v.source), v.outWord, len(v.output))
}

// links are the translation's links (app.Translation.Links) between white-space words, sorted, each once.
func (v wordView) links(tr app.Translation, threshold float64) []align.Link {
	var out []align.Link
	for _, l := range tr.Links(threshold) {
		if l.Src < len(v.srcWordOf) && l.Tgt < len(v.outWord) {
			out = append(out, align.Link{Src: v.srcWordOf[l.Src], Tgt: v.outWord[l.Tgt]})
		}
	}
	return slices.Compact(align.Sort(out))
}
