package data

import (
	"fmt"
	"sort"
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

var specials = []string{PadToken, UnkToken, BOSToken, EOSToken}

// Vocab maps tokens to ids and back; ids 0..3 are the specials.
type Vocab struct {
	tokens []string
	ids    map[string]int
}

// BuildVocab counts the tokens of sents and keeps those seen at least minFreq times, most frequent first (ties
// in byte order), after the specials, truncated to maxSize entries in all when maxSize > 0.
func BuildVocab(sents [][]string, minFreq, maxSize int) *Vocab {
	counts := map[string]int{}
	for _, s := range sents {
		for _, tok := range s {
			counts[tok]++
		}
	}
	var kept []string
	for tok, n := range counts {
		if n >= minFreq && !isSpecial(tok) {
			kept = append(kept, tok)
		}
	}
	sort.Slice(kept, func(i, j int) bool {
		if counts[kept[i]] != counts[kept[j]] {
			return counts[kept[i]] > counts[kept[j]]
		}
		return kept[i] < kept[j]
	})
	tokens := append(append([]string(nil), specials...), kept...)
	if maxSize > 0 && len(tokens) > max(maxSize, len(specials)) {
		tokens = tokens[:max(maxSize, len(specials))]
	}
	v, err := NewVocab(tokens)
	if err != nil {
		panic(err) // unique by construction
	}
	return v
}

func isSpecial(tok string) bool {
	for _, s := range specials {
		if tok == s {
			return true
		}
	}
	return false
}

// NewVocab rebuilds a vocabulary from its tokens in id order, as saved in a checkpoint.
func NewVocab(tokens []string) (*Vocab, error) {
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
		if _, dup := v.ids[tok]; dup {
			return nil, fmt.Errorf("data: vocabulary token %q appears twice", tok)
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

// Token returns the token of id; an id out of range is a programming error.
func (v *Vocab) Token(id int) string { return v.tokens[id] }

// Encode maps tokens to ids.
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

// Example is one encoded pair, without <s> or </s>. Tgt is nil for sentences to translate.
type Example struct {
	Src, Tgt []int
}

// EncodeExamples encodes pairs with the two vocabularies.
func EncodeExamples(pairs []Pair, src, tgt *Vocab) []Example {
	out := make([]Example, len(pairs))
	for i, p := range pairs {
		out[i] = Example{Src: src.Encode(p.Src), Tgt: tgt.Encode(p.Tgt)}
	}
	return out
}
