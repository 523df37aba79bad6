// Package lexicon learns which target words each source word translates into — IBM Model 1 probabilities
// estimated from the training corpus — and gives a source sentence its shortlist: the few hundred target words
// its translation is likely to need, so that decoding scores those instead of the whole vocabulary (as Marian's
// lexical shortlist does).
package lexicon

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/attend-nmt/attend/data"
)

// Table holds, for each source id, the target ids it most probably translates into, most probable first.
type Table struct {
	// Best[s] are the target ids t with the largest p(t | s) for source id s, at most Keep of them; empty for
	// a source word never seen in training.
	Best [][]int32
}

// Options set how Learn estimates the table.
type Options struct {
	Iterations int // EM iterations of IBM Model 1 (5 is the usual count)
	Keep       int // target ids kept per source id
	// MaxPairs caps the sentence pairs learned from: a larger corpus contributes every k-th pair, evenly spread,
	// so that time and memory stay bounded (0: every pair).
	MaxPairs int
}

// DefaultOptions returns Learn's settings when attend train builds a table: enough iterations for the
// probabilities to settle on a corpus like Multi30k, more candidates per word than a shortlist takes, and at
// most a million sentence pairs (a few hundred MB and a few minutes at most).
func DefaultOptions() Options { return Options{Iterations: 5, Keep: 50, MaxPairs: 1_000_000} }

// Learn estimates p(t | s), IBM Model 1 (Brown et al. 1993), on the examples (source and target ids, as the
// model's vocabularies encode them) and keeps the opts.Keep most probable target ids of every source id. Model 1
// explains each target word by one word of its source sentence or by the empty word; expectation maximisation
// starts from uniform probabilities. Only pairs of words seen together in a sentence pair have a probability:
// memory grows with the number of distinct such pairs, and each iteration's work with Σ |source|·|target| over
// the pairs (opts.MaxPairs bounds both). srcSize and tgtSize are the vocabularies' sizes; ids outside them are an
// error.
func Learn(examples []data.Example, srcSize, tgtSize int, opts Options) (*Table, error) {
	if opts.Iterations < 1 || opts.Keep < 1 || opts.MaxPairs < 0 {
		return nil, fmt.Errorf("lexicon: iterations %d and keep %d must be positive, max pairs %d at least 0", opts.Iterations, opts.Keep, opts.MaxPairs)
	}
	if n := len(examples); opts.MaxPairs > 0 && n > opts.MaxPairs {
		every := (n + opts.MaxPairs - 1) / opts.MaxPairs
		sample := make([]data.Example, 0, n/every+1)
		for i := 0; i < n; i += every {
			sample = append(sample, examples[i])
		}
		examples = sample
	}
	null := srcSize // the empty word's row
	for i, ex := range examples {
		for _, s := range ex.Src {
			if s < 0 || s >= srcSize {
				return nil, fmt.Errorf("lexicon: example %d: source id %d outside the vocabulary of %d", i, s, srcSize)
			}
		}
		for _, t := range ex.Tgt {
			if t < 0 || t >= tgtSize {
				return nil, fmt.Errorf("lexicon: example %d: target id %d outside the vocabulary of %d", i, t, tgtSize)
			}
		}
	}
	// The pairs (s, t) seen together, as sorted rows: targets[row[s]:row[s+1]] are the t of source s. Each
	// sentence adds its distinct pairs once, and a row is sorted and compacted whenever it has doubled since it
	// last was, so a row holds at most about twice its distinct targets.
	cooc := make([][]int32, srcSize+1)
	compacted := make([]int, srcSize+1)
	var srcIDs, tgtIDs []int32
	for _, ex := range examples {
		srcIDs, tgtIDs = distinct(srcIDs, ex.Src), distinct(tgtIDs, ex.Tgt)
		for _, s := range append(srcIDs, int32(null)) {
			cooc[s] = append(cooc[s], tgtIDs...)
			if len(cooc[s]) > 2*compacted[s]+1024 {
				slices.Sort(cooc[s])
				cooc[s] = slices.Compact(cooc[s])
				compacted[s] = len(cooc[s])
			}
		}
	}
	row := make([]int, srcSize+2)
	for s, ts := range cooc {
		slices.Sort(ts)
		cooc[s] = slices.Compact(ts)
		row[s+1] = row[s] + len(cooc[s])
	}
	targets := make([]int32, 0, row[srcSize+1])
	for s := range cooc {
		targets = append(targets, cooc[s]...)
		cooc[s] = nil
	}
	find := func(s, t int) int { // index of (s, t) in targets; the pair is known to be there
		i, _ := slices.BinarySearch(targets[row[s]:row[s+1]], int32(t))
		return row[s] + i
	}

	prob := make([]float64, len(targets)) // p(t | s), uniform at first
	for i := range prob {
		prob[i] = 1 / float64(tgtSize)
	}
	counts := make([]float64, len(targets))
	var at []int // for the current target word, the index of (s, t) for each source word and the empty word
	for it := 0; it < opts.Iterations; it++ {
		clear(counts)
		for _, ex := range examples {
			for _, t := range ex.Tgt {
				at = at[:0]
				total := 0.0
				for _, s := range ex.Src {
					i := find(s, t)
					at = append(at, i)
					total += prob[i]
				}
				i := find(null, t)
				at = append(at, i)
				total += prob[i]
				for _, i := range at {
					counts[i] += prob[i] / total
				}
			}
		}
		for s := 0; s <= srcSize; s++ {
			sum := 0.0
			for _, c := range counts[row[s]:row[s+1]] {
				sum += c
			}
			for i := row[s]; i < row[s+1]; i++ {
				prob[i] = counts[i] / sum
			}
		}
	}

	tab := &Table{Best: make([][]int32, srcSize)}
	for s := range srcSize {
		idx := make([]int, row[s+1]-row[s])
		for k := range idx {
			idx[k] = row[s] + k
		}
		// Most probable first; ties by the smaller (more frequent) target id, so the table is deterministic.
		slices.SortFunc(idx, func(a, b int) int {
			if c := cmp.Compare(prob[b], prob[a]); c != 0 {
				return c
			}
			return cmp.Compare(targets[a], targets[b])
		})
		best := make([]int32, 0, min(len(idx), opts.Keep))
		for _, i := range idx[:min(len(idx), opts.Keep)] {
			best = append(best, targets[i])
		}
		tab.Best[s] = best
	}
	return tab, nil
}

// distinct returns the distinct ids of ids, sorted, in buf.
func distinct(buf []int32, ids []int) []int32 {
	buf = buf[:0]
	for _, id := range ids {
		buf = append(buf, int32(id))
	}
	slices.Sort(buf)
	return slices.Compact(buf)
}

// Check reports a table that does not fit vocabularies of srcSize and tgtSize words, naming the first bad entry.
func (t *Table) Check(srcSize, tgtSize int) error {
	if len(t.Best) > srcSize {
		return fmt.Errorf("lexicon: %d source rows for a vocabulary of %d", len(t.Best), srcSize)
	}
	for s, ts := range t.Best {
		for k, id := range ts {
			if id < 0 || int(id) >= tgtSize {
				return fmt.Errorf("lexicon: row %d entry %d is target id %d, outside the vocabulary of %d", s, k, id, tgtSize)
			}
		}
	}
	return nil
}

// ShortlistSize sets how many target words a sentence's shortlist takes.
type ShortlistSize struct {
	Frequent int // the most frequent target words (the vocabulary's first ids after the specials), for every sentence
	Best     int // for each source word, its most probable translations (at most the Options.Keep it was learned with)
}

// Candidates returns the target ids a translation of src (source ids) may use under s, sorted and without
// repeats: </s> and <unk>, the s.Frequent most frequent target words (data.BuildVocab sorts the vocabulary by
// frequency), and the s.Best most probable translations of every source word. tgtSize is the target
// vocabulary's size. buf, when large enough, is reused.
func (t *Table) Candidates(src []int, s ShortlistSize, tgtSize int, buf []int) []int {
	out := append(buf[:0], data.EOSID, data.UnkID)
	for id := data.EOSID + 1; id < data.EOSID+1+min(max(s.Frequent, 0), tgtSize); id++ {
		if id < tgtSize {
			out = append(out, id)
		}
	}
	for _, w := range src {
		if w >= 0 && w < len(t.Best) {
			for _, id := range t.Best[w][:min(len(t.Best[w]), max(s.Best, 0))] {
				out = append(out, int(id))
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}
