package decoder

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// bigram is the smallest model type there can be, added through the Session interface alone: its logits of the
// next word depend only on the previous word (a table of vocab × vocab), and it attends to source position
// prev mod the row's source length. Its rows carry no state, so Reorder only counts them.
type bigram struct {
	table   []float64
	vocab   int
	lengths []int // each row's source length, moved by Reorder
	srcLen  int
}

func (b *bigram) Step(prev []int, logits, weights []float64) {
	if len(prev) != len(b.lengths) {
		panic(fmt.Sprintf("bigram: %d words for %d rows", len(prev), len(b.lengths)))
	}
	for r, p := range prev {
		copy(logits[r*b.vocab:(r+1)*b.vocab], b.table[p*b.vocab:(p+1)*b.vocab])
		row := weights[r*b.srcLen : (r+1)*b.srcLen]
		clear(row)
		row[p%b.lengths[r]] = 1
	}
}

func (b *bigram) Reorder(from []int) {
	lengths := make([]int, len(from))
	for r, f := range from {
		lengths[r] = b.lengths[f]
	}
	b.lengths = lengths
}

// TestNewModelTypeThroughSessions searches with a model type defined here (bigram): greedy search follows the
// table's argmax from bos, beam search of width 1 finds the same words, a wider beam's best hypothesis scores at
// least as well, an ensemble of the model with itself translates as the model alone, and a shortlist, which
// needs a model whose output layer the search computes, is refused.
func TestNewModelTypeThroughSessions(t *testing.T) {
	const vocab, bos, eos, maxLen, srcLen = 9, 0, 1, 7, 5
	rng := rand.New(rand.NewPCG(3, 4))
	table := make([]float64, vocab*vocab)
	for i := range table {
		table[i] = 3 * rng.NormFloat64()
	}
	lengths := []int{5, 2, 4}
	start := func() Session[float64] {
		return &bigram{table: table, vocab: vocab, lengths: append([]int(nil), lengths...), srcLen: srcLen}
	}
	greedy, err := Greedy([]Session[float64]{start()}, lengths, srcLen, vocab, bos, eos, maxLen, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := bigramGreedy(table, vocab, bos, eos, maxLen) // every sentence starts from bos, so all find the same words
	for s, h := range greedy {
		if fmt.Sprint(h.Tokens) != fmt.Sprint(want) || len(h.Attention[0]) != lengths[s] {
			t.Fatalf("sentence %d: greedy found %v with %d attention weights, the table's argmax is %v", s, h.Tokens, len(h.Attention[0]), want)
		}
	}
	twice, err := Greedy([]Session[float64]{start(), start()}, lengths, srcLen, vocab, bos, eos, maxLen, nil)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(twice) != fmt.Sprint(greedy) {
		t.Fatalf("the ensemble of the model with itself found %v, the model %v", twice, greedy)
	}
	one, err := Beam([]Session[float64]{start()}, lengths, srcLen, vocab, bos, eos, BeamOptions{Width: 1, MaxLen: maxLen}, Output[float64]{})
	if err != nil {
		t.Fatal(err)
	}
	wide, err := Beam([]Session[float64]{start()}, lengths, srcLen, vocab, bos, eos, BeamOptions{Width: 4, NBest: 2, MaxLen: maxLen}, Output[float64]{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Beam([]Session[float64]{start()}, lengths, srcLen, vocab, bos, eos, BeamOptions{Width: 2, MaxLen: maxLen},
		Output[float64]{Shortlist: &Shortlist[float64]{}}); err == nil {
		t.Error("a shortlist of a model whose output layer the search cannot compute was taken")
	}
	for s := range lengths {
		if fmt.Sprint(one[s][0].Tokens) != fmt.Sprint(want) {
			t.Fatalf("sentence %d: a beam of 1 found %v, greedy %v", s, one[s][0].Tokens, want)
		}
		if len(wide[s]) != 2 || wide[s][0].Score < one[s][0].Score {
			t.Fatalf("sentence %d: a beam of 4 found %d hypotheses, the best scoring %v; a beam of 1 %v", s, len(wide[s]), wide[s][0].Score, one[s][0].Score)
		}
	}
}

// bigramJoiner is a bigram whose rows sentences can join (a Joiner), padded to its longest row's source.
type bigramJoiner struct{ bigram }

func (b *bigramJoiner) Step(prev []int, logits, weights []float64) {
	b.srcLen = b.SrcLen()
	b.bigram.Step(prev, logits, weights)
}

func (b *bigramJoiner) Join(src Session[float64], rows []int) {
	for _, r := range rows {
		b.lengths = append(b.lengths, src.(*bigramJoiner).lengths[r])
	}
}

func (b *bigramJoiner) SrcLen() int { return max(1, slices.Max(append([]int{0}, b.lengths...))) }

// TestRunningBatchOfANewModelType runs GreedyQueue over blocks of bigramJoiner Sessions, a model type that
// defines Join and SrcLen and nothing the recurrent decoder's search abilities need: with a batch of 2 rows
// and 2 goroutines, blocks of 1 to 3 sentences join it as rows free, the batch empties and takes new sentences
// again, and every sentence comes out with the table's argmax words and its own source length of attention.
func TestRunningBatchOfANewModelType(t *testing.T) {
	const vocab, bos, eos, maxLen = 9, 0, 1, 7
	rng := rand.New(rand.NewPCG(5, 6))
	table := make([]float64, vocab*vocab)
	for i := range table {
		table[i] = 3 * rng.NormFloat64()
	}
	want, lengths := bigramGreedy(table, vocab, bos, eos, maxLen), map[int]int{}
	var blocks []*Block[float64]
	for b, ls := range [][]int{{4}, {2, 6, 3}, {5}, {1, 7}} {
		ses := &bigramJoiner{bigram{table: table, vocab: vocab, lengths: slices.Clone(ls)}}
		block := &Block[float64]{Sessions: []Session[float64]{ses}, Lengths: ls}
		for r, l := range ls {
			id := 10*b + r
			block.IDs, lengths[id] = append(block.IDs, id), l
		}
		blocks = append(blocks, block)
	}
	got := map[int]Hypothesis{}
	err := GreedyQueue(func() *Block[float64] {
		if len(blocks) == 0 {
			return nil
		}
		b := blocks[0]
		blocks = blocks[1:]
		return b
	}, func(id int, h Hypothesis) { got[id] = h }, GreedyOptions{Rows: 2, Threads: 2, Vocab: vocab, BOS: bos, EOS: eos, MaxLen: maxLen})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(lengths) {
		t.Fatalf("%d sentences came back of %d", len(got), len(lengths))
	}
	for id, h := range got {
		if fmt.Sprint(h.Tokens) != fmt.Sprint(want) || len(h.Attention[0]) != lengths[id] {
			t.Fatalf("sentence %d: %v with %d attention weights; want %v with %d", id, h.Tokens, len(h.Attention[0]), want, lengths[id])
		}
	}
}

// bigramGreedy is greedy search by hand over a bigram model's table (vocab×vocab scores of the next word given
// the previous one): the words from bos until eos (not kept) or maxLen words, the lowest id on ties.
func bigramGreedy(table []float64, vocab, bos, eos, maxLen int) []int {
	want, prev := []int{}, bos
	for len(want) < maxLen {
		best := 0
		for w := range vocab {
			if table[prev*vocab+w] > table[prev*vocab+best] {
				best = w
			}
		}
		if best == eos {
			break
		}
		want, prev = append(want, best), best
	}
	return want
}
