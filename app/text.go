package app

import (
	"context"
	"strings"

	"github.com/attend-nmt/attend/data"
	"github.com/attend-nmt/attend/model"
)

// TextOptions chooses how TranslateText reads its lines and in which units it returns the translations.
type TextOptions struct {
	Decode    DecodeOptions
	Lowercase bool // lowercase the input (the checkpoint's data.lowercase)
	// Tokenized means the output is wanted as the model's tokens separated by spaces (translate --tokenized)
	// instead of detokenized text, so the tokens are the output's words.
	Tokenized bool
	// TokenLevel makes the units of the translations the model's tokens on both sides (the input as the
	// model's tokenizer splits it, "Mr." into "mr" and "."; the output tokens, subwords joined) instead of the
	// white-space words of the input line and of the output text.
	TokenLevel bool
}

// TranslateText translates lines of text as `attend translate` does and returns one translation per line, in
// order, in the words of the text, as Marian's --alignment gives them: Source is the white-space words of the
// line as given (not lowercased), Output the white-space words of the output text, which is
// strings.Join(Output, " ") (the detokenized output, or its tokens with opts.Tokenized). Each word is split into
// the model's pieces — by the model's tokenizer, then its subword merges if it has some — and the output pieces
// go into the words that detokenizing (data.DetokenizeWords) glues them into: "dog" and "." into "dog.".
//
// The attention is brought to words as align --tokenized and heatmap --tokenized bring it: a source word's
// column is the sum of its pieces' columns, an output word's row the mean of its pieces' rows (so rows still
// sum to 1), and the row of </s>, when the search produced it, stays the last row. Translation.Links links two
// words when any of their pieces are linked (argmax, or every weight at or above a threshold, per output piece;
// </s> is never linked), so links never point past the words of either side. The model's own view — its pieces
// and the attention between them — is kept in Subwords, unless each word of both sides is one piece, itself.
//
// With opts.TokenLevel the units are the model's tokens instead (TranslateTokens on the tokenized lines):
// the translation text is then data.Detokenize(Output), or Output joined by spaces with opts.Tokenized.
//
// The search is opts.Decode's (see TranslateTokens); the translations are the same whatever the units. A
// cancelled ctx stops it as it stops TranslateTokens: with ctx's error and the translations of the lines before
// the first it did not finish.
func TranslateText(ctx context.Context, m *model.Seq2Seq[float32], lines []string, opts TextOptions) ([]Translation, error) {
	tok := Tokenizer(m, opts.Lowercase)
	if opts.TokenLevel {
		return translateLines(ctx, m, tok, lines, opts.Decode)
	}
	if err := opts.Decode.Validate(); err != nil {
		return nil, err
	}
	words := make([][]string, len(lines))
	for i, text := range lines {
		words[i] = nonNil(data.WhitespaceTokenizer{}.Tokenize(text))
	}
	pieces, srcWord := splitSentences(m, tok, words)
	out, err := translatePieces(ctx, m, pieces, opts.Decode) // with ctx's error, those of a prefix of lines
	for i, tr := range out {
		outWords, outWord := textWords(m, tr.Output, opts.Tokenized)
		w := toGivenWords(tr, words[i], srcWord[i], outWords, outWord)
		if samePieces(tr.Source, words[i], srcWord[i]) && samePieces(tr.Output, outWords, outWord) {
			w.Subwords = nil // the model's view is the words': nothing to add
		}
		w.Alternatives = nil
		for _, alt := range tr.Alternatives {
			altWords, _ := textWords(m, alt.Output, opts.Tokenized)
			w.Alternatives = append(w.Alternatives, Alternative{Output: altWords, Score: alt.Score})
		}
		out[i] = w
	}
	return out, err
}

// samePieces reports whether every word is one piece, the word itself.
func samePieces(pieces, words []string, wordOf []int) bool {
	if len(pieces) != len(words) {
		return false
	}
	for i, p := range pieces {
		if wordOf[i] != i || p != words[i] {
			return false
		}
	}
	return true
}

// textWords are the white-space words of the text of a translation's output pieces — the pieces' subwords
// joined (for a model with merges), then detokenized unless tokenized — and the word each piece went into
// (-1: none, for pieces that make no word).
func textWords(m *model.Seq2Seq[float32], pieces []string, tokenized bool) (words []string, wordOf []int) {
	tokens, tokenOf := pieces, []int(nil)
	if m.Subwords != nil {
		tokens, tokenOf = data.JoinSubwords(pieces)
	}
	words, wordOfToken := tokens, []int(nil)
	if !tokenized {
		words, wordOfToken = data.DetokenizeWords(tokens)
	}
	wordOf = make([]int, len(pieces))
	for p := range pieces {
		t := p
		if tokenOf != nil {
			t = tokenOf[p]
		}
		switch {
		case t < 0:
			wordOf[p] = -1
		case wordOfToken != nil:
			wordOf[p] = wordOfToken[t]
		default:
			wordOf[p] = t
		}
	}
	return nonNil(words), wordOf
}

// translationText is the text `attend translate` writes for output words: the words joined by spaces at the
// word level (TranslateText), the tokens detokenized (or joined, when tokenized) at the token level.
func translationText(output []string, opts TextOptions) string {
	if opts.TokenLevel && !opts.Tokenized {
		return data.Detokenize(output)
	}
	return strings.Join(output, " ")
}
