package decoder

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/attend-nmt/attend/align"
	"github.com/attend-nmt/attend/encoder"
	"github.com/attend-nmt/attend/internal/gradcheck"
	"github.com/attend-nmt/attend/kernels"
	"github.com/attend-nmt/attend/param"
)

// Sizes of the random decoders below: a vocabulary of 6 with </s> = 3, so sentences end after varied numbers of
// steps.
const (
	queueVocab, queueEOS, queueBOS, queueMemDim = 6, 3, 2, 8
)

// randomLengths draws the source lengths of sentences sentences in each of blocks blocks, each 1 to longest.
func randomLengths(rng *rand.Rand, blocks, sentences, longest int) [][]int {
	lengths := make([][]int, blocks)
	for b := range lengths {
		for range sentences {
			lengths[b] = append(lengths[b], 1+rng.IntN(longest))
		}
	}
	return lengths
}

// randomBlocks returns blocks of encoded sentences with the given source lengths per block, each block padded
// to its longest sentence plus one position; padding holds random values too, which masking must ignore.
func randomBlocks(rng *rand.Rand, lengths [][]int) []*encBlock[float64] {
	var blocks []*encBlock[float64]
	id := 0
	for _, ls := range lengths {
		rows, srcLen := len(ls), slices.Max(ls)+1
		b := &encBlock[float64]{Enc: &encoder.Output[float64]{Rows: rows, SrcLen: srcLen, Hidden: queueMemDim / 2,
			Memory: gradcheck.Random(rng, rows*srcLen*queueMemDim, 1),
			FinalH: gradcheck.Random(rng, rows*queueMemDim, 1), FinalC: gradcheck.Random(rng, rows*queueMemDim, 1)},
			Lengths: ls}
		for range ls {
			b.IDs = append(b.IDs, id)
			id++
		}
		blocks = append(blocks, b)
	}
	return blocks
}

// queueOf returns GreedyQueue's next: the blocks in order, then nil.
func queueOf(blocks []*encBlock[float64]) func() *encBlock[float64] {
	queue := slices.Clone(blocks)
	return func() *encBlock[float64] {
		if len(queue) == 0 {
			return nil
		}
		b := queue[0]
		queue = queue[1:]
		return b
	}
}

// testDecoder is a small decoder with additive attention over a vocabulary of vocab words, drawn from seed.
func testDecoder(t *testing.T, vocab int, seed uint64) *Decoder[float64] {
	t.Helper()
	set := param.NewSet[float64]()
	d, err := New(set, Config{Vocab: vocab, Emb: 4, Hidden: 6, MemDim: queueMemDim, Attn: 6}, nil)
	if err != nil {
		t.Fatal(err)
	}
	set.Pack()
	d.Init(rand.New(rand.NewPCG(seed, 1)))
	return d
}

// alone is the sentence of row r of b as a block of its own, with no padding.
func alone(b *encBlock[float64], r int) (*encoder.Output[float64], []int) {
	return rowOf(b.Enc, r, b.Lengths[r]), []int{b.Lengths[r]}
}

// TestGreedyQueueMatchesDecodingAlone decodes 11 sentences of 1 to 9 words, in three blocks of mixed lengths,
// through a batch of 3 rows that is refilled as sentences end, stepped by one goroutine and by two, and requires for each sentence exactly the words,
// the attention and the ending that Greedy gives it alone (a batch of one row, unpadded), with every score
// function. It also requires that the rows ended after several different numbers of steps, so that rows were
// refilled at different times and the padded source length both grew and shrank.
func TestGreedyQueueMatchesDecodingAlone(t *testing.T) {
	lengths := [][]int{{3, 1, 4}, {9, 2, 6, 5}, {5, 3, 5, 8}}
	const maxLen = 12
	for _, tc := range testCases(append(align.Names(), "additive+input-feeding", "additive+3-layers", "additive+input-feeding+after",
		"general+3-layers+after"), []int{1, 2}) {
		name, threads := tc.attention, tc.threads
		t.Run(fmt.Sprintf("%s/threads=%d", name, threads), func(t *testing.T) {
			attention, after := strings.CutSuffix(name, "+after") // attending after the LSTM reads y_{t-1}
			attention, feeding := strings.CutSuffix(attention, "+input-feeding")
			layers := 1
			if a, stacked := strings.CutSuffix(attention, "+3-layers"); stacked {
				attention, layers = a, 3
			}
			rng := rand.New(rand.NewPCG(3, 4))
			blocks := randomBlocks(rng, lengths)
			// The first seed whose sentences end after at least four different numbers of steps.
			var d *Decoder[float64]
			var got map[int]Hypothesis
			for seed := uint64(1); seed < 100; seed++ {
				set := param.NewSet[float64]()
				var err error
				d, err = New(set, Config{Vocab: queueVocab, Emb: 4, Hidden: 6, MemDim: queueMemDim, Attn: 6,
					Attention: attention, Window: 2, Heads: 2, Temperature: 1, InputFeeding: feeding, Layers: layers, AttendAfterInput: after}, nil)
				if err != nil {
					t.Fatal(err)
				}
				set.Pack()
				d.Init(rand.New(rand.NewPCG(seed, 1)))
				got = map[int]Hypothesis{}
				d.queue(3, threads, kernels.Products{}, queueOf(blocks), queueBOS, queueEOS, maxLen, func(id int, h Hypothesis) {
					if _, twice := got[id]; twice {
						t.Fatalf("sentence %d came back twice", id)
					}
					got[id] = h
				})
				steps := map[int]bool{}
				for _, h := range got {
					steps[len(h.Attention)] = true
				}
				if len(steps) >= 4 {
					break
				}
			}
			steps := map[int]bool{}
			for _, b := range blocks {
				for r, id := range b.IDs {
					h, ok := got[id]
					if !ok {
						t.Fatalf("sentence %d never came back", id)
					}
					enc, ls := alone(b, r)
					want := d.Greedy(enc, ls, queueBOS, queueEOS, maxLen)[0]
					if fmt.Sprint(h.Tokens) != fmt.Sprint(want.Tokens) || h.Finished != want.Finished {
						t.Fatalf("sentence %d: refilled batch %v (finished %v), alone %v (finished %v)", id, h.Tokens, h.Finished, want.Tokens, want.Finished)
					}
					if fmt.Sprint(h.Attention) != fmt.Sprint(want.Attention) {
						t.Fatalf("sentence %d: attention in the refilled batch\n%v\nalone\n%v", id, h.Attention, want.Attention)
					}
					steps[len(h.Attention)] = true
				}
			}
			if len(steps) < 4 {
				t.Fatalf("sentences ended after %d distinct numbers of steps; want at least 4 to exercise refilling", len(steps))
			}
		})
	}
}

type queueCase struct {
	attention string
	threads   int
}

func testCases(attentions []string, threads []int) []queueCase {
	var out []queueCase
	for _, a := range attentions {
		for _, th := range threads {
			out = append(out, queueCase{a, th})
		}
	}
	return out
}

// TestGreedyMatchesRowByRow checks Greedy over a whole padded batch against decoding each row alone.
func TestGreedyMatchesRowByRow(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	b := randomBlocks(rng, [][]int{{2, 7, 1, 4, 4}})[0]
	d := testDecoder(t, queueVocab, 7)
	lengths := slices.Clone(b.Lengths)
	hyps := d.Greedy(b.Enc, lengths, queueBOS, queueEOS, 9)
	if !slices.Equal(lengths, b.Lengths) {
		t.Fatalf("Greedy changed the lengths to %v", lengths)
	}
	for r, h := range hyps {
		enc, ls := alone(b, r)
		want := d.Greedy(enc, ls, queueBOS, queueEOS, 9)[0]
		if fmt.Sprint(h) != fmt.Sprint(want) {
			t.Fatalf("row %d: batch %v, alone %v", r, h, want)
		}
	}
}

// TestGreedyQueueAllocatesPerSentence: with </s> never chosen, every sentence runs to the length limit; with two
// goroutines stepping the batch, four times the steps must not cost more allocations beyond the amortised growth of the reused buffers (a few per
// row), where one allocation per row and step would add hundreds.
func TestGreedyQueueAllocatesPerSentence(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	set := param.NewSet[float32]()
	d, err := New(set, Config{Vocab: queueVocab, Emb: 4, Hidden: 6, MemDim: queueMemDim, Attn: 6}, nil)
	if err != nil {
		t.Fatal(err)
	}
	set.Pack()
	d.Init(rng)
	const rows, srcLen = 4, 5
	enc := &encoder.Output[float32]{Rows: rows, SrcLen: srcLen, Hidden: queueMemDim / 2,
		Memory: toFloat32(gradcheck.Random(rng, rows*srcLen*queueMemDim, 1)),
		FinalH: toFloat32(gradcheck.Random(rng, rows*queueMemDim, 1)), FinalC: toFloat32(gradcheck.Random(rng, rows*queueMemDim, 1))}
	lengths := []int{5, 3, 4, 2}
	allocs := func(maxLen int) float64 {
		return testing.AllocsPerRun(5, func() {
			block := &encBlock[float32]{Enc: enc, Lengths: lengths, IDs: []int{0, 1, 2, 3}}
			d.queue(rows, 2, kernels.Products{}, func() *encBlock[float32] {
				b := block
				block = nil
				return b
			}, queueBOS, -1, maxLen, func(int, Hypothesis) {})
		})
	}
	short, long := allocs(20), allocs(80)
	if long > short+4*rows {
		t.Fatalf("Greedy allocates %.0f times for 80 steps and %.0f for 20: it allocates per step", long, short)
	}
}

// TestArgmax checks argmax against the plain loop it replaces (the first index of the largest value, NaNs
// passed over) on rows of every length up to 40 with ties, infinities and NaNs, including a NaN first.
func TestArgmax(t *testing.T) {
	plain := func(xs []float32) int {
		best := 0
		for i, x := range xs {
			if x > xs[best] {
				best = i
			}
		}
		return best
	}
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	rng := rand.New(rand.NewPCG(1, 2))
	for n := 0; n <= 40; n++ {
		for trial := 0; trial < 200; trial++ {
			xs := make([]float32, n)
			for i := range xs {
				switch k := rng.IntN(20); {
				case k == 0:
					xs[i] = nan
				case k == 1:
					xs[i] = -inf
				case k == 2 && trial%7 == 0:
					xs[i] = inf
				default:
					xs[i] = float32(rng.IntN(5)) // small integers: many ties
				}
			}
			if got, want := kernels.Argmax(xs), plain(xs); got != want {
				t.Fatalf("Argmax(%v) = %d, want %d", xs, got, want)
			}
		}
	}
}

// TestGreedyQueueTakesSentencesThatArriveLater feeds GreedyQueue as a server does: next answers "none yet" (a
// block without sentences) for a few steps between the blocks, so the second and third blocks enter a batch
// that is already decoding. Every sentence must still come out exactly as Greedy gives it alone, next must be
// asked again after each "none yet", and a "none yet" with an empty batch must end the search.
func TestGreedyQueueTakesSentencesThatArriveLater(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 9))
	blocks := randomBlocks(rng, [][]int{{3, 5}, {2, 7, 4}, {6}})
	d := testDecoder(t, queueVocab, 4)
	const maxLen = 10
	for _, threads := range []int{1, 2} {
		// The script of next's answers: a block, three "none yet", a block, one "none yet", a block, then nil.
		script := []*encBlock[float64]{blocks[0], {}, {}, {}, blocks[1], {}, blocks[2]}
		asked := 0
		got := map[int]Hypothesis{}
		d.queue(4, threads, kernels.Products{}, func() *encBlock[float64] {
			asked++
			if len(script) == 0 {
				return nil
			}
			b := script[0]
			script = script[1:]
			return b
		}, queueBOS, queueEOS, maxLen, func(id int, h Hypothesis) { got[id] = h })
		if len(script) != 0 {
			t.Fatalf("threads %d: %d answers of next were never asked for", threads, len(script))
		}
		for _, b := range blocks {
			for r, id := range b.IDs {
				enc, ls := alone(b, r)
				want := d.Greedy(enc, ls, queueBOS, queueEOS, maxLen)[0]
				if h, ok := got[id]; !ok || fmt.Sprint(h) != fmt.Sprint(want) {
					t.Fatalf("threads %d: sentence %d: %v (came back: %v), alone %v", threads, id, h, ok, want)
				}
			}
		}
		// A "none yet" when no sentence is in the batch ends the search at once.
		calls := 0
		d.queue(4, threads, kernels.Products{}, func() *encBlock[float64] { calls++; return &encBlock[float64]{} }, queueBOS, queueEOS, maxLen,
			func(int, Hypothesis) { t.Fatal("a sentence came out of an empty queue") })
		if calls != 1 {
			t.Fatalf("threads %d: next asked %d times with an empty batch, want 1", threads, calls)
		}
	}
}
