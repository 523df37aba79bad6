package app

import (
	"encoding/json"
	"slices"

	"github.com/attend-nmt/attend/align"
	"github.com/attend-nmt/attend/data"
	"github.com/attend-nmt/attend/model"
)

// Subwords is the token-level view of a translation whose words are not the model's tokens — by a model
// trained on subwords (data.subword bpe), or of words given pre-tokenized (forceWords, TranslateWords): the
// tokens the model read and wrote and its attention between them, from which Translation's word-level fields
// are made. Attention[t][i] is the weight of source subword i when output subword t (or the final </s>) was
// produced.
type Subwords struct {
	Source    []string      `json:"source"`
	Output    []string      `json:"output"`
	Attention [][]float32   `json:"attention"`
	Heads     [][][]float32 `json:"heads,omitempty"` // per head, when asked for (see Translation.Heads)
	// SelfAttention is Translation.SelfAttention among source subwords.
	SelfAttention [][][][]float32 `json:"self_attention,omitempty"`
	// SourceWord[i] and OutputWord[t] are the indices of the words that source subword i and output subword t
	// belong to (-1: none, for an output made only of empty "@@" subwords).
	SourceWord []int `json:"-"`
	OutputWord []int `json:"-"`
}

// subwordsJSON is Subwords without its JSON methods.
type subwordsJSON Subwords

// MarshalJSON writes the subwords with "</s>" at the end of "output" when the attention has its row, as
// Translation.MarshalJSON does.
func (s Subwords) MarshalJSON() ([]byte, error) {
	j := subwordsJSON(s)
	j.Output = labelRows(s.Output, len(s.Attention))
	return json.Marshal(j)
}

// UnmarshalJSON reads what MarshalJSON writes.
func (s *Subwords) UnmarshalJSON(b []byte) error {
	*s = Subwords{}
	err := json.Unmarshal(b, (*subwordsJSON)(s))
	s.Output = unlabelRows(s.Output, len(s.Attention))
	return err
}

// Tokenizer is the tokenizer `attend translate` reads a model's input text with (model.DataConfig.Tokenizer):
// lowercasing when the model was trained lowercased, and keeping the "@@" markers of text split into subwords
// beforehand when the model has no merges of its own.
func Tokenizer(m *model.Seq2Seq[float32], lowercase bool) data.Tokenizer {
	return &data.RegexTokenizer{Lowercase: lowercase, KeepBPEMarkers: m.Subwords == nil}
}

// splitSentences splits every sentence of words into the model's tokens, and says which word each token came
// from. tok, when set, first splits each word — a white-space token of pre-tokenized text — by the model's
// tokenizer ("Mr." into "mr" and "."); then a model with subword merges splits the tokens into subwords. With
// neither, the words are the tokens and wordOf is nil.
func splitSentences(m *model.Seq2Seq[float32], tok data.Tokenizer, sents [][]string) (pieces [][]string, wordOf [][]int) {
	if m.Subwords == nil && tok == nil {
		return sents, nil
	}
	pieces, wordOf = make([][]string, len(sents)), make([][]int, len(sents))
	for i, s := range sents {
		if tok == nil {
			pieces[i], wordOf[i] = m.Subwords.Split(s)
			continue
		}
		pieces[i], wordOf[i] = []string{}, []int{}
		for w, word := range s {
			tokens := tok.Tokenize(word)
			if m.Subwords != nil {
				tokens, _ = m.Subwords.Split(tokens)
			}
			for _, t := range tokens {
				pieces[i], wordOf[i] = append(pieces[i], t), append(wordOf[i], w)
			}
		}
	}
	return pieces, wordOf
}

// WordAttention turns attention between subwords (or tokens) into attention between the words they make up:
// srcWord[i] and outWord[t] are the words of source piece i and output piece t. A column of the result is the
// sum of the columns of the word's subwords (the attention a word gets is what its pieces got together), and a
// row the mean of the rows of the word's subwords (what a word looked at is the average of what its pieces
// looked at), so every row still sums to one over the source words. This is how Clark et al. (2019, "What does
// BERT look at?") bring subword attention to words. Rows past the output subwords (the row of </s>) become
// one last row. Output words without subwords (none occur) get zero rows.
func WordAttention(attn [][]float32, srcWord []int, srcWords int, outWord []int, outWords int) [][]float32 {
	rows := outWords
	if len(attn) > len(outWord) {
		rows++
	}
	out := make([][]float32, rows)
	pieces := make([]int, rows)
	for r := range out {
		out[r] = make([]float32, srcWords)
	}
	for t, row := range attn {
		r := outWords // </s>
		if t < len(outWord) {
			r = outWord[t]
		}
		if r < 0 {
			continue
		}
		pieces[r]++
		for i, w := range row {
			if i < len(srcWord) && srcWord[i] >= 0 {
				out[r][srcWord[i]] += w
			}
		}
	}
	for r, n := range pieces {
		if n > 1 {
			for i := range out[r] {
				out[r][i] /= float32(n)
			}
		}
	}
	return out
}

// wordLinks are the hard links of a subword translation brought to words as OpenNMT-py's to_word_align does:
// subword i aligned to output subword t links their words, once, whatever the number of subword links between
// them. The subword links are made as for words (align.Hard: argmax, or every weight at or above threshold).
func (s *Subwords) wordLinks(threshold float64) []align.Link {
	sub := align.Hard(s.Attention, len(s.Source), min(len(s.Output), len(s.Attention)), threshold)
	links := make([]align.Link, 0, len(sub))
	for _, l := range sub {
		if src, tgt := s.SourceWord[l.Src], s.OutputWord[l.Tgt]; src >= 0 && tgt >= 0 {
			links = append(links, align.Link{Src: src, Tgt: tgt})
		}
	}
	return slices.Compact(align.Sort(links))
}

// toWords makes a translation of subwords one of words: its source is words (the subwords' own), its output the
// output subwords joined (data.JoinSubwords), its attention brought to words (WordAttention), and its
// log-probabilities (of a forced target) summed over each word's subwords, which makes them the words'
// log-probabilities; each head's matrix (Heads) is brought to words like Attention. The subword translation is
// kept in Subwords.
func toWords(tr Translation, words []string, srcWord []int) Translation {
	out, outWord := data.JoinSubwords(tr.Output)
	return toGivenWords(tr, words, srcWord, out, outWord)
}

// toGivenWords is toWords for an output whose words are known (a forced target split by Split): out, and
// outWord, the word of each output subword.
func toGivenWords(tr Translation, words []string, srcWord []int, out []string, outWord []int) Translation {
	sub := &Subwords{Source: tr.Source, Output: tr.Output, Attention: tr.Attention, Heads: tr.Heads, SelfAttention: tr.SelfAttention,
		SourceWord: srcWord, OutputWord: outWord}
	w := Translation{Source: words, Output: nonNil(out), Score: tr.Score, Subwords: sub,
		Attention: WordAttention(tr.Attention, srcWord, len(words), outWord, len(out))}
	for _, head := range tr.Heads {
		w.Heads = append(w.Heads, WordAttention(head, srcWord, len(words), outWord, len(out)))
	}
	// Among source words: rows (queries) and columns (keys) are both source subwords.
	for _, block := range tr.SelfAttention {
		var heads [][][]float32
		for _, head := range block {
			heads = append(heads, WordAttention(head, srcWord, len(words), srcWord, len(words)))
		}
		w.SelfAttention = append(w.SelfAttention, heads)
	}
	if tr.LogProbs != nil {
		w.LogProbs = make([]float64, len(w.Attention))
		for t, lp := range tr.LogProbs {
			r := len(out)
			if t < len(outWord) {
				r = outWord[t]
			}
			if r >= 0 && r < len(w.LogProbs) {
				w.LogProbs[r] += lp
			}
		}
	}
	for _, alt := range tr.Alternatives {
		w.Alternatives = append(w.Alternatives, Alternative{Output: nonNil(data.UndoBPE(alt.Output)), Score: alt.Score})
	}
	return w
}
