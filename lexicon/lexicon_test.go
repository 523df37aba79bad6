package lexicon

import (
	"cmp"
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/attend-nmt/attend/data"
)

// The textbook case (Koehn, Statistical Machine Translation, ch. 4): Model 1 learns from co-occurrence alone
// that das → the, Haus → house, Buch → book, ein → a.
func TestLearnTextbook(t *testing.T) {
	src := map[string]int{"das": 4, "Haus": 5, "Buch": 6, "ein": 7}
	tgt := map[string]int{"the": 4, "house": 5, "book": 6, "a": 7}
	enc := func(words string, v map[string]int) []int {
		var ids []int
		for _, w := range strings.Fields(words) {
			ids = append(ids, v[w])
		}
		return ids
	}
	var ex []data.Example
	for _, p := range [][2]string{{"das Haus", "the house"}, {"das Buch", "the book"}, {"ein Buch", "a book"}} {
		ex = append(ex, data.Example{Src: enc(p[0], src), Tgt: enc(p[1], tgt)})
	}
	tab, err := Learn(ex, 8, 8, Options{Iterations: 10, Keep: 4})
	if err != nil {
		t.Fatal(err)
	}
	for s, want := range map[string]string{"das": "the", "Haus": "house", "Buch": "book", "ein": "a"} {
		if got := tab.Best[src[s]][0]; int(got) != tgt[want] {
			t.Errorf("most probable translation of %s: id %d, want %d (%s)", s, got, tgt[want], want)
		}
	}
	if len(tab.Best[0]) != 0 {
		t.Errorf("a source id never seen has candidates %v", tab.Best[0])
	}
}

// Learn's sparse estimate keeps the same ranking as a dense Model 1 over every (source, target) pair, written
// with plain loops, on a random corpus.
func TestLearnMatchesDense(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const srcSize, tgtSize, iters = 30, 25, 4
	var ex []data.Example
	for range 200 {
		var e data.Example
		for range rng.IntN(8) { // some sources are empty: only the empty word explains their targets
			e.Src = append(e.Src, 4+rng.IntN(srcSize-4))
		}
		for range 1 + rng.IntN(8) {
			e.Tgt = append(e.Tgt, 4+rng.IntN(tgtSize-4))
		}
		ex = append(ex, e)
	}
	tab, err := Learn(ex, srcSize, tgtSize, Options{Iterations: iters, Keep: tgtSize})
	if err != nil {
		t.Fatal(err)
	}
	const keep = 3
	short, err := Learn(ex, srcSize, tgtSize, Options{Iterations: iters, Keep: keep})
	if err != nil {
		t.Fatal(err)
	}

	// Dense reference: p[s][t], row srcSize is the empty word; pairs never seen together keep probability 0
	// after the first iteration, as in the sparse version.
	p := make([][]float64, srcSize+1)
	for s := range p {
		p[s] = make([]float64, tgtSize)
		for t := range p[s] {
			p[s][t] = 1.0 / tgtSize
		}
	}
	for range iters {
		c := make([][]float64, srcSize+1)
		for s := range c {
			c[s] = make([]float64, tgtSize)
		}
		for _, e := range ex {
			for _, w := range e.Tgt {
				total := 0.0
				for _, s := range e.Src {
					total += p[s][w]
				}
				total += p[srcSize][w]
				for _, s := range e.Src {
					c[s][w] += p[s][w] / total
				}
				c[srcSize][w] += p[srcSize][w] / total
			}
		}
		for s := range c {
			sum := 0.0
			for _, x := range c[s] {
				sum += x
			}
			for w := range c[s] {
				if sum > 0 {
					p[s][w] = c[s][w] / sum
				}
			}
		}
	}
	seen := make([]map[int]bool, srcSize)
	for s := range seen {
		seen[s] = map[int]bool{}
	}
	for _, e := range ex {
		for _, s := range e.Src {
			for _, w := range e.Tgt {
				seen[s][w] = true
			}
		}
	}
	for s := range srcSize {
		var want []int32
		for w := range seen[s] {
			want = append(want, int32(w))
		}
		slices.SortFunc(want, func(a, b int32) int {
			if c := cmp.Compare(p[s][b], p[s][a]); c != 0 {
				return c
			}
			return cmp.Compare(a, b)
		})
		if !slices.Equal(tab.Best[s], want) {
			t.Fatalf("source %d: ranking %v, dense Model 1 gives %v", s, tab.Best[s], want)
		}
		if w := want[:min(keep, len(want))]; !slices.Equal(short.Best[s], w) {
			t.Fatalf("source %d with Keep %d: %v, want the first of the ranking %v", s, keep, short.Best[s], w)
		}
	}
}

func TestLearnRejects(t *testing.T) {
	for _, c := range []struct {
		ex   data.Example
		opts Options
		want string
	}{
		{data.Example{Src: []int{9}, Tgt: []int{4}}, Options{Iterations: 1, Keep: 1}, "source id 9 outside the vocabulary of 8"},
		{data.Example{Src: []int{4}, Tgt: []int{-1}}, Options{Iterations: 1, Keep: 1}, "target id -1 outside"},
		{data.Example{Src: []int{4}, Tgt: []int{4}}, Options{Iterations: 0, Keep: 1}, "iterations 0 and keep 1 must be positive"},
		{data.Example{Src: []int{4}, Tgt: []int{4}}, Options{Iterations: 1, Keep: 1, MaxPairs: -1}, "max pairs -1 at least 0"},
	} {
		_, err := Learn([]data.Example{c.ex}, 8, 8, c.opts)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Learn(%v, %+v): error %v, want one containing %q", c.ex, c.opts, err, c.want)
		}
	}
}

// TestLearnMaxPairs: a corpus larger than MaxPairs is learned from every k-th pair, the same table as learning
// from those pairs alone.
func TestLearnMaxPairs(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	var ex, every3 []data.Example
	for i := range 100 {
		e := data.Example{Src: []int{4 + rng.IntN(10), 4 + rng.IntN(10)}, Tgt: []int{4 + rng.IntN(10)}}
		ex = append(ex, e)
		if i%3 == 0 {
			every3 = append(every3, e)
		}
	}
	got, err := Learn(ex, 14, 14, Options{Iterations: 3, Keep: 5, MaxPairs: 34})
	if err != nil {
		t.Fatal(err)
	}
	want, err := Learn(every3, 14, 14, Options{Iterations: 3, Keep: 5})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.EqualFunc(got.Best, want.Best, slices.Equal) {
		t.Fatalf("MaxPairs 34 of 100 pairs: %v, every third pair: %v", got.Best, want.Best)
	}
}

func TestCandidates(t *testing.T) {
	tab := &Table{Best: [][]int32{nil, nil, nil, nil, {40, 9, 5}, {7, 40}}}
	got := tab.Candidates([]int{4, 5, 99, 4}, ShortlistSize{Frequent: 3, Best: 2}, 50, nil)
	// </s> 3, <unk> 1, frequent 4 5 6, word 4: 40 9, word 5: 7 40; id 99 has no row.
	if want := []int{1, 3, 4, 5, 6, 7, 9, 40}; !slices.Equal(got, want) {
		t.Errorf("candidates %v, want %v", got, want)
	}
	if got := tab.Candidates(nil, ShortlistSize{Frequent: 100}, 6, nil); !slices.Equal(got, []int{1, 3, 4, 5}) {
		t.Errorf("frequent words past the vocabulary: %v, want [1 3 4 5]", got)
	}
	if got := tab.Candidates([]int{4}, ShortlistSize{Frequent: math.MaxInt, Best: -1}, 6, nil); !slices.Equal(got, []int{1, 3, 4, 5}) {
		t.Errorf("sizes out of range: %v, want [1 3 4 5]", got)
	}
}

func TestCheck(t *testing.T) {
	tab := &Table{Best: [][]int32{{4}, {5, 8}}}
	if err := tab.Check(2, 9); err != nil {
		t.Errorf("a fitting table: %v", err)
	}
	if err := tab.Check(2, 8); err == nil || !strings.Contains(err.Error(), "row 1 entry 1 is target id 8") {
		t.Errorf("an id past the target vocabulary: %v", err)
	}
	if err := (&Table{Best: [][]int32{{-3}}}).Check(2, 9); err == nil || !strings.Contains(err.Error(), "row 0 entry 0 is target id -3") {
		t.Errorf("a negative id: %v", err)
	}
	if err := tab.Check(1, 9); err == nil || !strings.Contains(err.Error(), "2 source rows for a vocabulary of 1") {
		t.Errorf("more rows than source words: %v", err)
	}
	// Issue #51's case 12: fewer rows than source words, or an id twice in a row, does not fit either.
	if err := tab.Check(3, 9); err == nil || !strings.Contains(err.Error(), "2 source rows for a vocabulary of 3") {
		t.Errorf("fewer rows than source words: %v", err)
	}
	if err := (&Table{Best: [][]int32{{4, 6, 4}}}).Check(1, 9); err == nil || !strings.Contains(err.Error(), "row 0 holds target id 4 twice (entries 0 and 2)") {
		t.Errorf("an id twice: %v", err)
	}
}

// randomCorpus is n pairs over vocabularies of the given sizes, with repeated words, empty sources and a few
// very frequent words, as real corpora have.
func randomCorpus(seed uint64, n, srcSize, tgtSize int) []data.Example {
	rng := rand.New(rand.NewPCG(seed, 7))
	word := func(size int) int {
		if rng.IntN(3) == 0 {
			return 4 + rng.IntN(3) // frequent words
		}
		return 4 + rng.IntN(size-4)
	}
	ex := make([]data.Example, n)
	for i := range ex {
		for range rng.IntN(9) {
			ex[i].Src = append(ex[i].Src, word(srcSize))
		}
		for range 1 + rng.IntN(9) {
			ex[i].Tgt = append(ex[i].Tgt, word(tgtSize))
		}
	}
	return ex
}

// TestLearnMatchesReference: the target-by-target, multi-threaded Learn gives exactly the tables of the
// first, single-threaded implementation (learnReference), whatever the number of threads, with and without a
// cap on the pairs.
func TestLearnMatchesReference(t *testing.T) {
	ex := randomCorpus(5, 3000, 300, 250)
	for _, opts := range []Options{{Iterations: 5, Keep: 50}, {Iterations: 3, Keep: 7, MaxPairs: 1000}} {
		want, err := learnReference(ex, 300, 250, opts)
		if err != nil {
			t.Fatal(err)
		}
		for _, threads := range []int{1, 2, 3, 8} {
			opts.Threads = threads
			got, err := Learn(ex, 300, 250, opts)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.EqualFunc(got.Best, want.Best, slices.Equal) {
				t.Fatalf("%+v: the table differs from the reference implementation's", opts)
			}
		}
	}
}

// TestLearnStops: a cancelled context stops Learn with its error.
func TestLearnStops(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := LearnFrom(ctx, data.Examples(randomCorpus(1, 100, 20, 20)), 20, 20, DefaultOptions()); !errors.Is(err, context.Canceled) {
		t.Fatalf("error %v, want context.Canceled", err)
	}
}
