// Package lexicon learns which target words each source word translates into — IBM Model 1 probabilities
// estimated from the training corpus — and gives a source sentence its shortlist: the few hundred target words
// its translation is likely to need, so that decoding scores those instead of the whole vocabulary (as Marian's
// lexical shortlist does).
package lexicon

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/attend-nmt/attend/data"
	"github.com/attend-nmt/attend/wordalign"
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
// (package wordalign, on every core) starts from uniform probabilities. Only pairs of words seen together in a
// sentence pair have a probability: memory grows with the number of distinct such pairs, and each iteration's
// work with Σ |source|·|target| over the pairs (opts.MaxPairs bounds both). srcSize and tgtSize are the
// vocabularies' sizes; ids outside them are an error.
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
	m, err := wordalign.Train(context.Background(), examples, srcSize, tgtSize, wordalign.Model1Options(opts.Iterations))
	if err != nil {
		return nil, fmt.Errorf("lexicon: %w", err)
	}
	tab := &Table{Best: make([][]int32, srcSize)}
	for s := range srcSize {
		targets, prob := m.Translations(s)
		idx := make([]int, len(targets))
		for k := range idx {
			idx[k] = k
		}
		// Most probable first; ties by the smaller (more frequent) target id, so the table is deterministic.
		slices.SortFunc(idx, func(a, b int) int {
			if c := cmp.Compare(prob[b], prob[a]); c != 0 {
				return c
			}
			return cmp.Compare(targets[a], targets[b])
		})
		best := make([]int32, 0, min(len(idx), opts.Keep))
		for _, k := range idx[:min(len(idx), opts.Keep)] {
			best = append(best, targets[k])
		}
		tab.Best[s] = best
	}
	return tab, nil
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
