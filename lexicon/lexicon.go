// Package lexicon learns which target words each source word translates into — IBM Model 1 probabilities
// estimated from the training corpus — and gives a source sentence its shortlist: the few hundred target words
// its translation is likely to need, so that decoding scores those instead of the whole vocabulary (as Marian's
// lexical shortlist does).
package lexicon

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"runtime"
	"slices"
	"sync"

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
	// Threads is how many goroutines share the work (<= 0: one per CPU). The table is the same whatever their
	// number.
	Threads int
	// Progress, when set, is told the number of EM iterations done, after each one.
	Progress func(iterations int)
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
	return LearnFrom(context.Background(), data.Examples(examples), srcSize, tgtSize, opts)
}

// LearnFrom is Learn of the examples of a data.Source (a data.Store, which may be on disk), stopped with ctx's
// error when ctx is cancelled. The work is shared by opts.Threads goroutines target word by target word: each
// target word's probabilities are updated by one goroutine, adding up the same numbers in the same order as
// one goroutine alone would, so the table does not depend on the number of goroutines.
func LearnFrom(ctx context.Context, examples data.Source, srcSize, tgtSize int, opts Options) (*Table, error) {
	if opts.Iterations < 1 || opts.Keep < 1 || opts.MaxPairs < 0 {
		return nil, fmt.Errorf("lexicon: iterations %d and keep %d must be positive, max pairs %d at least 0", opts.Iterations, opts.Keep, opts.MaxPairs)
	}
	threads := opts.Threads
	if threads <= 0 {
		threads = runtime.GOMAXPROCS(0)
	}
	c, err := sample(ctx, examples, srcSize, tgtSize, opts.MaxPairs)
	if err != nil {
		return nil, err
	}
	m, err := newModel1(c, srcSize, tgtSize, threads)
	if err != nil {
		return nil, err
	}
	for it := range opts.Iterations {
		if err := m.iterate(ctx); err != nil {
			return nil, err
		}
		if opts.Progress != nil {
			opts.Progress(it + 1)
		}
	}
	return m.table(opts.Keep), nil
}

// corpus is the pairs learned from, compactly: pair i's source ids are src[srcOff[i]:srcOff[i+1]], its target
// ids likewise.
type corpus struct {
	src, tgt       []int32
	srcOff, tgtOff []int
}

func (c *corpus) pairs() int           { return len(c.srcOff) - 1 }
func (c *corpus) source(i int) []int32 { return c.src[c.srcOff[i]:c.srcOff[i+1]] }
func (c *corpus) target(i int) []int32 { return c.tgt[c.tgtOff[i]:c.tgtOff[i+1]] }
func (c *corpus) add(src, tgt []int32) {
	c.src, c.tgt = append(c.src, src...), append(c.tgt, tgt...)
	c.mark()
}
func (c *corpus) mark() {
	c.srcOff, c.tgtOff = append(c.srcOff, len(c.src)), append(c.tgtOff, len(c.tgt))
}
func (c *corpus) addInts(src, tgt []int) {
	c.src, c.tgt = appendInt32(c.src, src), appendInt32(c.tgt, tgt)
	c.mark()
}

func appendInt32(dst []int32, ids []int) []int32 {
	for _, id := range ids {
		dst = append(dst, int32(id))
	}
	return dst
}

// pairReader is a source that can give a pair's ids without converting them (data.Store).
type pairReader interface {
	Pair(i int, buf []int32) (src, tgt []int32, err error)
}

// sample copies the pairs learned from, every k-th of the source when it has more than maxPairs (0: every
// pair), and checks their ids.
func sample(ctx context.Context, examples data.Source, srcSize, tgtSize, maxPairs int) (*corpus, error) {
	n, every := examples.Len(), 1
	if maxPairs > 0 && n > maxPairs {
		every = (n + maxPairs - 1) / maxPairs
	}
	pairs, srcTokens, tgtTokens := 0, 0, 0
	for i := 0; i < n; i += every {
		s, t := examples.Lens(i)
		pairs, srcTokens, tgtTokens = pairs+1, srcTokens+s, tgtTokens+max(t, 0)
	}
	c := &corpus{src: make([]int32, 0, srcTokens), tgt: make([]int32, 0, tgtTokens), srcOff: make([]int, 1, pairs+1), tgtOff: make([]int, 1, pairs+1)}
	fast, isFast := examples.(pairReader)
	var buf []int32
	for i, k := 0, 0; i < n; i, k = i+every, k+1 {
		if k%4096 == 0 && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if isFast {
			src, tgt, err := fast.Pair(i, buf)
			if err != nil {
				return nil, fmt.Errorf("lexicon: %w", err)
			}
			c.add(src, tgt)
			buf = src[:0]
		} else {
			ex, err := examples.Example(i)
			if err != nil {
				return nil, fmt.Errorf("lexicon: %w", err)
			}
			c.addInts(ex.Src, ex.Tgt)
		}
		for _, s := range c.source(k) {
			if s < 0 || int(s) >= srcSize {
				return nil, fmt.Errorf("lexicon: example %d: source id %d outside the vocabulary of %d", k, s, srcSize)
			}
		}
		for _, t := range c.target(k) {
			if t < 0 || int(t) >= tgtSize {
				return nil, fmt.Errorf("lexicon: example %d: target id %d outside the vocabulary of %d", k, t, tgtSize)
			}
		}
	}
	return c, nil
}

// model1 is IBM Model 1's state, laid out by target word: row t lists the source words seen with t (sorted,
// the empty word, numbered srcSize, last), with p(t | s) and the expected counts of the iteration in progress
// beside them. occ lists, for each target word, the pairs it occurs in, once per occurrence, in corpus order.
type model1 struct {
	c                *corpus
	srcSize, threads int
	rowStart         []int   // row t is [rowStart[t], rowStart[t+1])
	rowSrc           []int32 // the source word of each entry
	prob, counts     []float64
	occStart         []int
	occ              []int32
	parts            [][2]int // target words [lo, hi) handed to one goroutine at a time, of about equal work
}

func newModel1(c *corpus, srcSize, tgtSize, threads int) (*model1, error) {
	m := &model1{c: c, srcSize: srcSize, threads: threads, rowStart: make([]int, tgtSize+1), occStart: make([]int, tgtSize+1)}
	// The occurrences of each target word, and each word's share of an iteration's work.
	work := make([]int, tgtSize)
	for i := range c.pairs() {
		for _, t := range c.target(i) {
			m.occStart[t+1]++
			work[t] += len(c.source(i)) + 1
		}
	}
	for t := range tgtSize {
		m.occStart[t+1] += m.occStart[t]
	}
	m.occ = make([]int32, m.occStart[tgtSize])
	next := slices.Clone(m.occStart[:tgtSize])
	for i := range c.pairs() {
		for _, t := range c.target(i) {
			m.occ[next[t]] = int32(i)
			next[t]++
		}
	}
	m.parts = cut(work, 8*threads)
	c.tgt, c.tgtOff = nil, nil // occ has what the iterations need of the targets

	// The rows: each target word's distinct source words, plus the empty word if it occurs at all.
	rows := make([][]int32, tgtSize)
	m.run(func(lo, hi int) {
		seen := make([]int32, srcSize) // the last target word that marked each source word, plus one
		for t := lo; t < hi; t++ {
			var row []int32
			for _, i := range m.occ[m.occStart[t]:m.occStart[t+1]] {
				for _, s := range c.source(int(i)) {
					if seen[s] != int32(t)+1 {
						seen[s] = int32(t) + 1
						row = append(row, s)
					}
				}
			}
			if m.occStart[t+1] > m.occStart[t] {
				slices.Sort(row)
				row = append(row, int32(srcSize))
			}
			rows[t] = row
		}
	})
	for t, row := range rows {
		m.rowStart[t+1] = m.rowStart[t] + len(row)
	}
	if m.rowStart[tgtSize] > math.MaxInt32 {
		return nil, fmt.Errorf("lexicon: %d (source, target) pairs seen together, more than %d: learn from fewer sentence pairs (Options.MaxPairs)", m.rowStart[tgtSize], math.MaxInt32)
	}
	m.rowSrc = make([]int32, 0, m.rowStart[tgtSize])
	for t := range rows {
		m.rowSrc = append(m.rowSrc, rows[t]...)
		rows[t] = nil
	}
	m.prob, m.counts = make([]float64, len(m.rowSrc)), make([]float64, len(m.rowSrc))
	for i := range m.prob {
		m.prob[i] = 1 / float64(tgtSize) // uniform at first
	}
	return m, nil
}

// cut splits [0, len(work)) into about n ranges of about equal total work.
func cut(work []int, n int) [][2]int {
	total := 0
	for _, w := range work {
		total += w
	}
	var parts [][2]int
	lo, acc := 0, 0
	for t, w := range work {
		acc += w
		if acc*n >= (len(parts)+1)*total && t+1 > lo {
			parts = append(parts, [2]int{lo, t + 1})
			lo = t + 1
		}
	}
	if lo < len(work) {
		parts = append(parts, [2]int{lo, len(work)})
	}
	return parts
}

// run calls fn on every part of the target words, on m.threads goroutines.
func (m *model1) run(fn func(lo, hi int)) {
	next := make(chan [2]int)
	var wg sync.WaitGroup
	for range m.threads {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for p := range next {
				fn(p[0], p[1])
			}
		}()
	}
	for _, p := range m.parts {
		next <- p
	}
	close(next)
	wg.Wait()
}

// iterate is one EM iteration: the expected counts of every (s, t) under the current probabilities, then the
// probabilities they give.
func (m *model1) iterate(ctx context.Context) error {
	c := m.c
	m.run(func(lo, hi int) {
		// pos[s] is the entry of (s, t) in row t for every source word s of the row being worked on, filled
		// for each row (every source word of an occurrence of t is in row t), so that finding an entry takes
		// one look-up.
		pos := make([]int32, m.srcSize)
		var at []int32 // for the current occurrence of t, the entry of (s, t) for each source word, then the empty word's
		for t := lo; t < hi; t++ {
			if t%64 == 0 && ctx.Err() != nil {
				return
			}
			first, end := m.rowStart[t], m.rowStart[t+1]
			if first == end {
				continue
			}
			null := end - 1
			for k, s := range m.rowSrc[first:null] {
				pos[s] = int32(first + k)
			}
			clear(m.counts[first:end])
			for _, i := range m.occ[m.occStart[t]:m.occStart[t+1]] {
				at = at[:0]
				total := 0.0
				for _, s := range c.source(int(i)) {
					k := pos[s]
					at = append(at, k)
					total += m.prob[k]
				}
				at = append(at, int32(null))
				total += m.prob[null]
				for _, k := range at {
					m.counts[k] += m.prob[k] / total
				}
			}
		}
	})
	if err := ctx.Err(); err != nil {
		return err
	}
	// p(t | s) = count(s, t) / Σ_t' count(s, t'), each sum taken over t' in increasing order.
	sums := make([]float64, m.srcSize+1)
	for k, s := range m.rowSrc {
		sums[s] += m.counts[k]
	}
	for k, s := range m.rowSrc {
		m.prob[k] = m.counts[k] / sums[s]
	}
	return nil
}

// table keeps the keep most probable target words of every source word: most probable first, ties by the
// smaller (more frequent) target id, so the table is deterministic.
func (m *model1) table(keep int) *Table {
	// The entries by source word: a counting sort of the rows' entries, which keeps t increasing within each.
	start := make([]int, m.srcSize+2)
	for _, s := range m.rowSrc {
		start[s+1]++
	}
	for s := range m.srcSize + 1 {
		start[s+1] += start[s]
	}
	entries := make([]int32, len(m.rowSrc)) // entry index, by source word
	targets := make([]int32, len(m.rowSrc)) // its target word
	next := slices.Clone(start)
	for t := range len(m.rowStart) - 1 {
		for k := m.rowStart[t]; k < m.rowStart[t+1]; k++ {
			s := m.rowSrc[k]
			entries[next[s]], targets[next[s]] = int32(k), int32(t)
			next[s]++
		}
	}
	tab := &Table{Best: make([][]int32, m.srcSize)}
	parts := make([]int, 0, m.srcSize/256+1)
	for lo := 0; lo < m.srcSize; lo += 256 {
		parts = append(parts, lo)
	}
	var wg sync.WaitGroup
	next2 := make(chan int)
	for range m.threads {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var idx []int
			for lo := range next2 {
				for s := lo; s < min(lo+256, m.srcSize); s++ {
					idx = idx[:0]
					for j := start[s]; j < start[s+1]; j++ {
						idx = append(idx, j)
					}
					slices.SortFunc(idx, func(a, b int) int {
						if c := cmp.Compare(m.prob[entries[b]], m.prob[entries[a]]); c != 0 {
							return c
						}
						return cmp.Compare(targets[a], targets[b])
					})
					best := make([]int32, 0, min(len(idx), keep))
					for _, j := range idx[:min(len(idx), keep)] {
						best = append(best, targets[j])
					}
					tab.Best[s] = best
				}
			}
		}()
	}
	for _, lo := range parts {
		next2 <- lo
	}
	close(next2)
	wg.Wait()
	return tab
}

// Check reports a table that does not fit vocabularies of srcSize and tgtSize words, naming the first bad entry:
// a target id outside the target vocabulary or twice in a row, or another number of rows than source words
// (Learn gives every source id a row, empty for a word never seen; a table with fewer would leave words without
// candidates, one with more would have rows no word reads).
func (t *Table) Check(srcSize, tgtSize int) error {
	seen := make(map[int32]int)
	for s, ts := range t.Best {
		clear(seen)
		for k, id := range ts {
			if id < 0 || int(id) >= tgtSize {
				return fmt.Errorf("lexicon: row %d entry %d is target id %d, outside the vocabulary of %d", s, k, id, tgtSize)
			}
			if j, dup := seen[id]; dup {
				return fmt.Errorf("lexicon: row %d holds target id %d twice (entries %d and %d)", s, id, j, k)
			}
			seen[id] = k
		}
	}
	if len(t.Best) != srcSize {
		return fmt.Errorf("lexicon: %d source rows for a vocabulary of %d; want one row per source word", len(t.Best), srcSize)
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
