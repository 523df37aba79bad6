package wordalign

import (
	"context"
	"fmt"
	"slices"

	"github.com/attend-nmt/attend/data"
)

// table lists the pairs of words that can be linked: every source word with every target word it shares a
// sentence pair with, and the empty word (row srcSize) with every target word. Row e is
// tgt[start[e]:start[e+1]], sorted, so a pair's index — where the lexical table keeps its probability and its
// expected count — is a binary search away. Memory grows with the number of distinct pairs, not with the
// vocabularies' product.
type table struct {
	start []int   // srcSize+2 offsets
	tgt   []int32 // the target ids of every row, one row after another
}

// newTable collects the pairs of the examples. Each sentence adds its distinct pairs once, and a row is sorted
// and compacted whenever it has doubled since it last was, so that a row holds at most about twice its
// distinct targets while it is being built. Ids must lie in [0, srcSize) and [0, tgtSize) (see checkIDs).
func newTable(examples []data.Example, srcSize int) *table {
	null := srcSize
	rows := make([][]int32, srcSize+1)
	compacted := make([]int, srcSize+1)
	var srcIDs, tgtIDs []int32
	for _, ex := range examples {
		if len(ex.Tgt) == 0 {
			continue
		}
		srcIDs, tgtIDs = distinct(srcIDs, ex.Src), distinct(tgtIDs, ex.Tgt)
		for _, e := range append(srcIDs, int32(null)) {
			rows[e] = append(rows[e], tgtIDs...)
			if len(rows[e]) > 2*compacted[e]+1024 {
				slices.Sort(rows[e])
				rows[e] = slices.Compact(rows[e])
				compacted[e] = len(rows[e])
			}
		}
	}
	t := &table{start: make([]int, srcSize+2)}
	for e, fs := range rows {
		slices.Sort(fs)
		rows[e] = slices.Compact(fs)
		t.start[e+1] = t.start[e] + len(rows[e])
	}
	t.tgt = make([]int32, 0, t.start[srcSize+1])
	for e := range rows {
		t.tgt = append(t.tgt, rows[e]...)
		rows[e] = nil
	}
	return t
}

// size is the number of pairs.
func (t *table) size() int { return len(t.tgt) }

// index is the index of the pair (e, f), and whether the table has it.
func (t *table) index(e, f int) (int, bool) {
	row := t.tgt[t.start[e]:t.start[e+1]]
	k, found := slices.BinarySearch(row, int32(f))
	return t.start[e] + k, found
}

// indexCache holds the table index of every pair of words of each training sentence pair, so that the EM
// iterations look none up: pair k's are at[start[k]:start[k+1]], target word by target word, each the empty
// word's then its source words'.
type indexCache struct {
	at    []int32
	start []int
}

// maxIndexCache is the most memory, in bytes, an indexCache takes: a larger corpus is looked up anew every
// iteration.
const maxIndexCache = 1 << 30

// newIndexCache looks up every pair of words of the examples once, on workers goroutines, or returns nil when
// that would take more than maxIndexCache bytes. Every pair must be in the table.
func (t *table) newIndexCache(examples []data.Example, srcSize, workers int) *indexCache {
	c := &indexCache{start: make([]int, len(examples)+1)}
	for k, ex := range examples {
		c.start[k+1] = c.start[k] + (len(ex.Src)+1)*len(ex.Tgt)
	}
	if 4*c.start[len(examples)] > maxIndexCache {
		return nil
	}
	c.at = make([]int32, c.start[len(examples)])
	data.ParallelFor(context.Background(), len(examples), workers, func(k int) {
		ex, at := examples[k], c.of(k)
		for _, f := range ex.Tgt {
			for j := range len(ex.Src) + 1 {
				e := srcSize
				if j > 0 {
					e = ex.Src[j-1]
				}
				i, _ := t.index(e, f)
				at[0], at = int32(i), at[1:]
			}
		}
	})
	return c
}

// of returns pair k's indices, nil without a cache.
func (c *indexCache) of(k int) []int32 {
	if c == nil {
		return nil
	}
	return c.at[c.start[k]:c.start[k+1]]
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

// checkIDs reports the first id of the examples outside [0, srcSize) or [0, tgtSize).
func checkIDs(examples []data.Example, srcSize, tgtSize int) error {
	for k, ex := range examples {
		for _, e := range ex.Src {
			if e < 0 || e >= srcSize {
				return fmt.Errorf("wordalign: sentence pair %d: source id %d outside the vocabulary of %d", k+1, e, srcSize)
			}
		}
		for _, f := range ex.Tgt {
			if f < 0 || f >= tgtSize {
				return fmt.Errorf("wordalign: sentence pair %d: target id %d outside the vocabulary of %d", k+1, f, tgtSize)
			}
		}
	}
	return nil
}
