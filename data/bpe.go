package data

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strings"
)

// BPEMarker ends every subword that is not the last of its word, as subword-nmt writes them: "unter@@
// halten" is "unterhalten".
const BPEMarker = "@@"

// endOfWord marks the last symbol of a word while merges are learned and applied, so that a merge learned at
// the end of words ("er</w>") is not applied inside them.
const endOfWord = "</w>"

// ErrBadMerge is the cause of a ParseError for a line of a merges file that is not two symbols.
var ErrBadMerge = errors.New("want two symbols separated by a space")

// BPE is a byte-pair encoding (Sennrich et al. 2016): an ordered list of symbol merges, learned from word
// frequencies by LearnBPE, that splits words into frequent subwords. The zero value has no merges and leaves
// every word whole. Its file form is subword-nmt's: "#version: 0.2", then one merge per line, "a b".
type BPE struct {
	Merges [][2]string       // in the order learned; the last symbol of a word carries the suffix "</w>"
	rank   map[[2]string]int // position of each merge in Merges, built on first use
}

// LearnBPE learns up to merges merges from the tokens of sents: starting from characters, it repeatedly joins
// the pair of adjacent symbols that occurs most often (counting each word as often as it occurs; ties go to the
// pair that sorts first), and stops early when no pair occurs twice.
func LearnBPE(sents [][]string, merges int) *BPE {
	counts := map[string]int{}
	for _, s := range sents {
		for _, w := range s {
			counts[w]++
		}
	}
	type wordSymbols struct {
		symbols []string
		count   int
	}
	words := make([]wordSymbols, 0, len(counts))
	for w, n := range counts {
		words = append(words, wordSymbols{symbols: splitWord(w), count: n})
	}
	b := &BPE{}
	for len(b.Merges) < merges {
		pairs := map[[2]string]int{}
		for _, w := range words {
			for i := 0; i+1 < len(w.symbols); i++ {
				pairs[[2]string{w.symbols[i], w.symbols[i+1]}] += w.count
			}
		}
		var best [2]string
		bestCount := 0
		for p, n := range pairs {
			if n > bestCount || n == bestCount && (p[0] < best[0] || p[0] == best[0] && p[1] < best[1]) {
				best, bestCount = p, n
			}
		}
		if bestCount < 2 {
			break
		}
		b.Merges = append(b.Merges, best)
		for i := range words {
			words[i].symbols = mergePair(words[i].symbols, best)
		}
	}
	return b
}

// splitWord is a word's characters, the last one marked as the end of the word.
func splitWord(w string) []string {
	var symbols []string
	for _, r := range w {
		symbols = append(symbols, string(r))
	}
	if len(symbols) > 0 {
		symbols[len(symbols)-1] += endOfWord
	}
	return symbols
}

// mergePair joins every occurrence of pair in symbols, left to right, in place.
func mergePair(symbols []string, pair [2]string) []string {
	out := symbols[:0]
	for i := 0; i < len(symbols); i++ {
		if i+1 < len(symbols) && symbols[i] == pair[0] && symbols[i+1] == pair[1] {
			out = append(out, pair[0]+pair[1])
			i++
			continue
		}
		out = append(out, symbols[i])
	}
	return out
}

// Segment splits one word into subwords by applying the merges in the order they were learned; every subword
// but the last ends with BPEMarker.
func (b *BPE) Segment(word string) []string {
	if b.rank == nil {
		b.rank = make(map[[2]string]int, len(b.Merges))
		for i, m := range b.Merges {
			if _, seen := b.rank[m]; !seen {
				b.rank[m] = i
			}
		}
	}
	symbols := splitWord(word)
	for len(symbols) > 1 {
		best, bestRank := [2]string{}, -1
		for i := 0; i+1 < len(symbols); i++ {
			if r, ok := b.rank[[2]string{symbols[i], symbols[i+1]}]; ok && (bestRank < 0 || r < bestRank) {
				best, bestRank = [2]string{symbols[i], symbols[i+1]}, r
			}
		}
		if bestRank < 0 {
			break
		}
		symbols = mergePair(symbols, best)
	}
	for i := range symbols {
		if i < len(symbols)-1 {
			symbols[i] += BPEMarker
		} else {
			symbols[i] = strings.TrimSuffix(symbols[i], endOfWord)
		}
	}
	return symbols
}

// Apply segments every token of a sentence.
func (b *BPE) Apply(tokens []string) []string {
	out := make([]string, 0, len(tokens))
	for _, t := range tokens {
		out = append(out, b.Segment(t)...)
	}
	return out
}

// UndoBPE joins subwords back into words: a token ending in BPEMarker is glued to the next one. A marked token
// at the end of the sentence (which Segment never writes, but a model may) keeps its text without the marker.
func UndoBPE(tokens []string) []string {
	var out []string
	var word strings.Builder
	for _, t := range tokens {
		if piece, ok := strings.CutSuffix(t, BPEMarker); ok {
			word.WriteString(piece)
			continue
		}
		word.WriteString(t)
		out = append(out, word.String())
		word.Reset()
	}
	if word.Len() > 0 {
		out = append(out, word.String())
	}
	return out
}

// WriteTo writes the merges in subword-nmt's format.
func (b *BPE) WriteTo(w io.Writer) (int64, error) {
	bw := bufio.NewWriter(w)
	n, _ := fmt.Fprintln(bw, "#version: 0.2")
	total := int64(n)
	for _, m := range b.Merges {
		n, _ = fmt.Fprintf(bw, "%s %s\n", m[0], m[1])
		total += int64(n)
	}
	return total, bw.Flush()
}

// ReadBPE reads merges written by WriteTo (or by subword-nmt's learn_bpe.py, version 0.2): lines of two symbols
// separated by one space, after an optional "#version:" line. Errors are *ParseError naming the line.
func ReadBPE(r io.Reader, name string) (*BPE, error) {
	lines := NewLines(r, name)
	b := &BPE{}
	for lines.Scan() {
		text := lines.Text()
		if lines.Line() == 1 && strings.HasPrefix(text, "#version:") {
			continue
		}
		fields := strings.Split(text, " ")
		if len(fields) != 2 || fields[0] == "" || fields[1] == "" {
			return nil, &ParseError{File: name, Line: lines.Line(), Err: ErrBadMerge}
		}
		b.Merges = append(b.Merges, [2]string{fields[0], fields[1]})
	}
	if err := lines.Err(); err != nil {
		return nil, err
	}
	return b, nil
}
