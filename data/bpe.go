package data

import (
	"bufio"
	"container/heap"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
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
// frequencies by LearnBPE, that splits words into frequent subwords. The zero value has no merges and splits
// every word into its characters. Its file form is subword-nmt's: "#version: 0.2", then one merge per line, "a b".
type BPE struct {
	Merges [][2]string       // in the order learned; the last symbol of a word carries the suffix "</w>"
	rank   map[[2]string]int // position of each merge in Merges, built on first use
	once   sync.Once         // builds rank, so that Segment is safe for concurrent use
}

// LearnBPE learns up to merges merges from the tokens of sents: starting from characters, it repeatedly joins
// the pair of adjacent symbols that occurs most often (counting each word as often as it occurs; ties go to the
// pair that sorts first), and stops early when no pair occurs twice.
//
// Pair counts are kept up to date as merges are made, touching only the words that hold the merged pair, and
// the most frequent pair comes from a heap whose outdated entries are skipped when they surface (subword-nmt
// updates its counts the same way): 8000 merges on Multi30k's German and English take seconds, where
// recounting every pair after each merge took minutes.
func LearnBPE(sents [][]string, merges int) *BPE {
	words, counts := countTokens(sents)
	return LearnBPEProgress(words, counts, merges, nil)
}

// LearnBPEProgress is LearnBPE of a corpus whose distinct words are words, word i occurring counts[i] times (a
// count of 0 is a word not seen): the same merges, from counts gathered while reading (see WordCounts). progress,
// when set, is told the number of merges learned so far, after each one.
func LearnBPEProgress(words []string, counts []int64, merges int, progress func(merges int)) *BPE {
	distinct := make([]int, 0, len(words))
	for i := range words {
		if counts[i] > 0 {
			distinct = append(distinct, i)
		}
	}
	// The word order decides nothing learned, but keeps the work the same run to run.
	slices.SortFunc(distinct, func(a, b int) int { return strings.Compare(words[a], words[b]) })
	l := &bpeLearner{pairs: map[[2]string]int{}, where: map[[2]string][]int{}}
	for i, w := range distinct {
		l.words = append(l.words, wordSymbols{symbols: splitWord(words[w]), count: int(counts[w])})
		l.add(i)
	}
	l.pushChanged()
	b := &BPE{}
	for len(b.Merges) < merges {
		best, ok := l.best()
		if !ok {
			break
		}
		b.Merges = append(b.Merges, best)
		for _, i := range l.where[best] {
			w := &l.words[i]
			if !hasPair(w.symbols, best) {
				continue // an index left over from before an earlier merge changed the word
			}
			l.remove(i)
			w.symbols = mergePair(w.symbols, best)
			l.add(i)
		}
		delete(l.where, best)
		l.pushChanged()
		if progress != nil {
			progress(len(b.Merges))
		}
	}
	return b
}

// wordSymbols is a distinct word of the corpus as its current symbols, and how often it occurs.
type wordSymbols struct {
	symbols []string
	count   int
}

// bpeLearner holds LearnBPE's state: every distinct word as symbols, the count of every adjacent pair (each
// word weighted by its frequency), the words each pair occurs in, and a max-heap of (count, pair) entries.
type bpeLearner struct {
	words   []wordSymbols
	pairs   map[[2]string]int   // occurrences of each adjacent pair
	where   map[[2]string][]int // indices of the words holding each pair (some outdated or repeated, none missing)
	heap    pairHeap
	changed map[[2]string]bool // pairs whose count changed since the last pushChanged
}

// add counts the pairs of word i.
func (l *bpeLearner) add(i int) {
	w := l.words[i]
	for j := 0; j+1 < len(w.symbols); j++ {
		p := [2]string{w.symbols[j], w.symbols[j+1]}
		if ws := l.where[p]; len(ws) == 0 || ws[len(ws)-1] != i { // a word repeating a pair is listed once
			l.where[p] = append(ws, i)
		}
		l.pairs[p] += w.count
		l.markChanged(p)
	}
}

// remove uncounts the pairs of word i.
func (l *bpeLearner) remove(i int) {
	w := l.words[i]
	for j := 0; j+1 < len(w.symbols); j++ {
		p := [2]string{w.symbols[j], w.symbols[j+1]}
		l.pairs[p] -= w.count
		l.markChanged(p)
	}
}

func (l *bpeLearner) markChanged(p [2]string) {
	if l.changed == nil {
		l.changed = map[[2]string]bool{}
	}
	l.changed[p] = true
}

// pushChanged puts the current count of every changed pair on the heap.
func (l *bpeLearner) pushChanged() {
	for p := range l.changed {
		if n := l.pairs[p]; n > 0 {
			heap.Push(&l.heap, pairCount{pair: p, count: n})
		}
	}
	clear(l.changed)
}

// best pops the most frequent pair (the first in sort order among equals), skipping entries whose count is out
// of date; ok is false when no pair occurs at least twice.
func (l *bpeLearner) best() (pair [2]string, ok bool) {
	for l.heap.Len() > 0 {
		top := heap.Pop(&l.heap).(pairCount)
		if top.count != l.pairs[top.pair] {
			continue
		}
		return top.pair, top.count >= 2
	}
	return pair, false
}

// pairCount is one heap entry: a pair and its count when the entry was pushed.
type pairCount struct {
	pair  [2]string
	count int
}

// pairHeap orders entries by count, highest first, then by pair, first in sort order first.
type pairHeap []pairCount

func (h pairHeap) Len() int { return len(h) }
func (h pairHeap) Less(i, j int) bool {
	if h[i].count != h[j].count {
		return h[i].count > h[j].count
	}
	return h[i].pair[0] < h[j].pair[0] || h[i].pair[0] == h[j].pair[0] && h[i].pair[1] < h[j].pair[1]
}
func (h pairHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *pairHeap) Push(x any)   { *h = append(*h, x.(pairCount)) }
func (h *pairHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// hasPair reports whether pair occurs in symbols.
func hasPair(symbols []string, pair [2]string) bool {
	for i := 0; i+1 < len(symbols); i++ {
		if symbols[i] == pair[0] && symbols[i+1] == pair[1] {
			return true
		}
	}
	return false
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
// but the last ends with BPEMarker. It is safe for concurrent use; Merges must not change after the first call.
func (b *BPE) Segment(word string) []string {
	b.once.Do(func() {
		b.rank = make(map[[2]string]int, len(b.Merges))
		for i, m := range b.Merges {
			if _, seen := b.rank[m]; !seen {
				b.rank[m] = i
			}
		}
	})
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

// Split segments every word of a sentence and says, for each subword, the index of the word it came from.
func (b *BPE) Split(words []string) (pieces []string, wordOf []int) {
	pieces, wordOf = make([]string, 0, len(words)), make([]int, 0, len(words))
	for i, w := range words {
		for _, p := range b.Segment(w) {
			pieces = append(pieces, p)
			wordOf = append(wordOf, i)
		}
	}
	return pieces, wordOf
}

// ApplyAll segments every sentence, each distinct word once.
func (b *BPE) ApplyAll(sents [][]string) [][]string {
	seen := map[string][]string{}
	out := make([][]string, len(sents))
	for i, s := range sents {
		if s == nil {
			continue
		}
		out[i] = make([]string, 0, len(s))
		for _, w := range s {
			pieces, ok := seen[w]
			if !ok {
				pieces = b.Segment(w)
				seen[w] = pieces
			}
			out[i] = append(out[i], pieces...)
		}
	}
	return out
}

// UndoBPE joins subwords back into words: a token ending in BPEMarker is glued to the next one. A marked token
// at the end of the sentence (which Segment never writes, but a model may) keeps its text without the marker.
func UndoBPE(tokens []string) []string {
	words, _ := JoinSubwords(tokens)
	return words
}

// JoinSubwords is UndoBPE that also says, for each subword, the index of the word it went into: -1 for the
// subwords of a sentence that holds nothing but empty marked subwords ("@@"), which make no word.
func JoinSubwords(pieces []string) (words []string, wordOf []int) {
	wordOf = make([]int, len(pieces))
	var word strings.Builder
	open := false // word holds the start of a word not yet ended
	for i, t := range pieces {
		wordOf[i] = len(words)
		if piece, ok := strings.CutSuffix(t, BPEMarker); ok {
			word.WriteString(piece)
			open = true
			continue
		}
		word.WriteString(t)
		words = append(words, word.String())
		word.Reset()
		open = false
	}
	if open && word.Len() > 0 {
		words = append(words, word.String())
	} else if open {
		// Only empty pieces ("@@") are left: they add nothing to the last word, or belong to no word at all.
		for i := len(pieces) - 1; i >= 0 && wordOf[i] == len(words); i-- {
			wordOf[i] = len(words) - 1
		}
	}
	return words, wordOf
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
