package data

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// The special tokens and their ids, first in every vocabulary.
const (
	PadID = 0
	UnkID = 1
	BOSID = 2
	EOSID = 3
)

// The spellings of the special tokens.
const (
	PadToken = "<pad>"
	UnkToken = "<unk>"
	BOSToken = "<s>"
	EOSToken = "</s>"
)

// specialTokens returns the specials in id order.
func specialTokens() [4]string { return [4]string{PadToken, UnkToken, BOSToken, EOSToken} }

// Vocab maps tokens to ids and back; ids 0..3 are the specials.
type Vocab struct {
	tokens []string
	ids    map[string]int
}

// BuildVocab counts the tokens of sents and keeps those seen at least minFreq times (minFreq <= 1 keeps all),
// after the specials, most frequent first, ties in byte order of the token (the same as Python's code point order), as the PyTorch reference implementation does. When
// maxSize > 0 the least frequent are cut so that Size() <= maxSize, specials included; the four specials are
// always kept, even when maxSize < 4. A token spelled like a special ("<unk>") in sents is not added again.
func BuildVocab(sents [][]string, minFreq, maxSize int) *Vocab {
	tokens, counts := countTokens(sents)
	return vocabFromCounts(tokens, counts, minFreq, maxSize)
}

// countTokens returns the distinct tokens of sents, in no particular order, with how often each occurs.
func countTokens(sents [][]string) (tokens []string, counts []int64) {
	seen := map[string]int64{}
	for _, s := range sents {
		for _, tok := range s {
			seen[tok]++
		}
	}
	for tok, n := range seen {
		tokens, counts = append(tokens, tok), append(counts, n)
	}
	return tokens, counts
}

// vocabFromCounts is BuildVocab of distinct tokens seen counts[i] times each (in any order; a count of 0 is a
// token not seen).
func vocabFromCounts(tokens []string, counts []int64, minFreq, maxSize int) *Vocab {
	var kept []int
	for i, tok := range tokens {
		if counts[i] > 0 && counts[i] >= int64(minFreq) && !isSpecial(tok) {
			kept = append(kept, i)
		}
	}
	slices.SortFunc(kept, func(a, b int) int {
		if c := cmp.Compare(counts[b], counts[a]); c != 0 {
			return c
		}
		return strings.Compare(tokens[a], tokens[b])
	})
	specials := specialTokens()
	out := append(make([]string, 0, len(specials)+len(kept)), specials[:]...)
	for _, i := range kept {
		out = append(out, tokens[i])
	}
	if maxSize > 0 && len(out) > max(maxSize, len(specials)) {
		out = out[:max(maxSize, len(specials))]
	}
	v, err := NewVocab(out)
	if err != nil {
		panic(err) // unique by construction
	}
	return v
}

func isSpecial(tok string) bool {
	specials := specialTokens()
	return slices.Contains(specials[:], tok)
}

// NewVocab rebuilds a vocabulary from its tokens in id order, as saved in a checkpoint (Tokens). It is an
// error if the first four tokens are not the specials in id order or if a token appears twice.
func NewVocab(tokens []string) (*Vocab, error) {
	specials := specialTokens()
	if len(tokens) < len(specials) {
		return nil, fmt.Errorf("data: vocabulary of %d tokens lacks the specials", len(tokens))
	}
	for i, s := range specials {
		if tokens[i] != s {
			return nil, fmt.Errorf("data: vocabulary token %d is %q, want %q", i, tokens[i], s)
		}
	}
	v := &Vocab{tokens: append([]string(nil), tokens...), ids: make(map[string]int, len(tokens))}
	for i, tok := range tokens {
		if first, dup := v.ids[tok]; dup {
			return nil, fmt.Errorf("data: vocabulary token %q appears twice (ids %d and %d)", tok, first, i)
		}
		v.ids[tok] = i
	}
	return v, nil
}

// Size is the number of tokens, specials included.
func (v *Vocab) Size() int { return len(v.tokens) }

// Tokens returns a copy of the tokens in id order.
func (v *Vocab) Tokens() []string { return append([]string(nil), v.tokens...) }

// ID returns the id of token, or UnkID.
func (v *Vocab) ID(token string) int {
	if id, ok := v.ids[token]; ok {
		return id
	}
	return UnkID
}

// Token returns the token of id; it panics if id is not in [0, Size()), a programming error.
func (v *Vocab) Token(id int) string {
	if id < 0 || id >= len(v.tokens) {
		panic(fmt.Sprintf("data: token id %d out of range [0, %d)", id, len(v.tokens)))
	}
	return v.tokens[id]
}

// Encode maps tokens to ids, UnkID for tokens not in the vocabulary.
func (v *Vocab) Encode(tokens []string) []int {
	ids := make([]int, len(tokens))
	for i, t := range tokens {
		ids[i] = v.ID(t)
	}
	return ids
}

// Decode maps ids to tokens, stopping before the first EOSID and skipping PadID and BOSID.
func (v *Vocab) Decode(ids []int) []string {
	var out []string
	for _, id := range ids {
		if id == EOSID {
			break
		}
		if id == PadID || id == BOSID {
			continue
		}
		out = append(out, v.Token(id))
	}
	return out
}

// Example is one encoded pair: ids without <s> or </s>. Tgt is nil for sentences to translate.
type Example struct {
	Src, Tgt []int
}

// EncodeExamples turns (filtered) pairs into examples, in order, encoding each side with its vocabulary. A pair
// whose Tgt is nil gives an example whose Tgt is nil (a sentence to translate).
func EncodeExamples(pairs []Pair, src, tgt *Vocab) []Example {
	out := make([]Example, len(pairs))
	for i, p := range pairs {
		out[i].Src = src.Encode(p.Src)
		if p.Tgt != nil {
			out[i].Tgt = tgt.Encode(p.Tgt)
		}
	}
	return out
}
