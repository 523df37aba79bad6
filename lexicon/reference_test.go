package lexicon

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/attend-nmt/attend/data"
)

// learnReference is Learn as it was first written: one thread, rows by source word, a binary search for every
// (source, target) pair of every sentence. The tests check that Learn gives exactly its tables.
func learnReference(examples []data.Example, srcSize, tgtSize int, opts Options) (*Table, error) {
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
		srcIDs, tgtIDs = distinctRef(srcIDs, ex.Src), distinctRef(tgtIDs, ex.Tgt)
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
func distinctRef(buf []int32, ids []int) []int32 {
	buf = buf[:0]
	for _, id := range ids {
		buf = append(buf, int32(id))
	}
	slices.Sort(buf)
	return slices.Compact(buf)
}
