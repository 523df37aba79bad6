package data

import (
	"cmp"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
)

func TestBatchLayoutIsTimeMajorWithShiftedTargets(t *testing.T) {
	examples := []Example{
		{Src: []int{5, 6, 7}, Tgt: []int{8}},
		{Src: []int{9}, Tgt: []int{10, 11}},
		{Src: []int{12, 13}, Tgt: []int{}},
	}
	got := MakeBatches(examples, BatchOptions{BatchSize: 3}, nil)
	// Sorted by source length: row 0 is example 1, row 1 example 2, row 2 example 0.
	want := []Batch{{
		Rows: 3, Real: 3, SrcLen: 3, TgtLen: 3, Index: []int{1, 2, 0}, SrcLengths: []int{1, 2, 3},
		Src: []int{
			9, 12, 5, // t=0
			0, 13, 6, // t=1
			0, 0, 7, // t=2
		},
		TgtIn: []int{
			BOSID, BOSID, BOSID,
			10, 0, 8,
			11, 0, 0,
		},
		TgtOut: []int{
			10, EOSID, 8,
			11, 0, EOSID,
			EOSID, 0, 0,
		},
	}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("batch\n%+v\nwant\n%+v", got, want)
	}
	b := got[0]
	if b.TgtTokens() != 6 {
		t.Errorf("TgtTokens() = %d, want 6", b.TgtTokens())
	}
	for r := range b.Rows {
		for step := range b.SrcLen {
			if want := b.Src[step*b.Rows+r] != PadID; (step < b.SrcLengths[r]) != want {
				t.Errorf("row %d, position %d: within the length %d is %v, want %v", r, step, b.SrcLengths[r], !want, want)
			}
		}
	}
}

func TestBatchFixedRowsAndRoundLenPadExactly(t *testing.T) {
	examples := []Example{{Src: []int{5, 6, 7}, Tgt: []int{8}}, {Src: []int{9}, Tgt: []int{10, 11, 12}}}
	got := MakeBatches(examples, BatchOptions{BatchSize: 3, RoundLen: 2, FixedRows: true}, nil)
	want := []Batch{{
		Rows: 3, Real: 2, SrcLen: 4, TgtLen: 4, Index: []int{1, 0}, SrcLengths: []int{1, 3, 0},
		Src: []int{
			9, 5, 0,
			0, 6, 0,
			0, 7, 0,
			0, 0, 0,
		},
		TgtIn: []int{
			BOSID, BOSID, 0,
			10, 8, 0,
			11, 0, 0,
			12, 0, 0,
		},
		TgtOut: []int{
			10, 8, 0,
			11, EOSID, 0,
			12, 0, 0,
			EOSID, 0, 0,
		},
	}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("batch\n%+v\nwant\n%+v", got, want)
	}
	if got[0].TgtTokens() != 6 {
		t.Errorf("TgtTokens() = %d, want 6", got[0].TgtTokens())
	}
}

func TestBatchRoundLenBoundsShapes(t *testing.T) {
	var examples []Example
	for n := 1; n <= 20; n++ {
		examples = append(examples, Example{Src: make([]int, n), Tgt: make([]int, n)})
	}
	for _, b := range MakeBatches(examples, BatchOptions{BatchSize: 3, RoundLen: 4}, nil) {
		longest := slices.Max(b.SrcLengths)
		if b.SrcLen%4 != 0 || b.SrcLen < longest || b.SrcLen >= longest+4 {
			t.Errorf("SrcLen %d for a longest source of %d with RoundLen 4", b.SrcLen, longest)
		}
		if b.TgtLen%4 != 0 || b.TgtLen < longest+1 || b.TgtLen >= longest+5 {
			t.Errorf("TgtLen %d for a longest target of %d with RoundLen 4", b.TgtLen, longest)
		}
		if len(b.Src) != b.SrcLen*b.Rows || len(b.TgtIn) != b.TgtLen*b.Rows || len(b.TgtOut) != b.TgtLen*b.Rows {
			t.Errorf("tensor sizes %d, %d, %d for S=%d T=%d rows=%d", len(b.Src), len(b.TgtIn), len(b.TgtOut), b.SrcLen, b.TgtLen, b.Rows)
		}
	}
}

func TestBatchWithoutTargetsHasNoTargetTensors(t *testing.T) {
	got := MakeBatches([]Example{{Src: []int{5, 6}}, {Src: []int{7}}}, BatchOptions{}, nil)
	want := []Batch{{Rows: 2, Real: 2, SrcLen: 2, Index: []int{1, 0}, SrcLengths: []int{1, 2}, Src: []int{7, 5, 0, 6}}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("batch\n%+v\nwant\n%+v", got, want)
	}
	if got[0].TgtTokens() != 0 {
		t.Fatalf("TgtTokens() = %d", got[0].TgtTokens())
	}
}

// indexes returns the Index of each batch.
func indexes(batches []Batch) [][]int {
	out := make([][]int, len(batches))
	for i, b := range batches {
		out[i] = b.Index
	}
	return out
}

func TestMakeBatchesStableSortsWithinChunks(t *testing.T) {
	lengths := []int{3, 1, 2, 1, 5, 4}
	examples := make([]Example, len(lengths))
	for i, n := range lengths {
		examples[i] = Example{Src: make([]int, n), Tgt: []int{4}}
	}
	cases := []struct {
		batchSize, chunkBatches int
		want                    [][]int
	}{
		{2, 1, [][]int{{1, 0}, {3, 2}, {5, 4}}},
		{2, 2, [][]int{{1, 3}, {2, 0}, {5, 4}}},
		{2, 3, [][]int{{1, 3}, {2, 0}, {5, 4}}},
		{4, 1, [][]int{{1, 3, 2, 0}, {5, 4}}},
		{4, 0, [][]int{{1, 3, 2, 0}, {5, 4}}}, // ChunkBatches 0 means 100: one chunk
	}
	for _, c := range cases {
		got := indexes(MakeBatches(examples, BatchOptions{BatchSize: c.batchSize, ChunkBatches: c.chunkBatches}, nil))
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("BatchSize %d, ChunkBatches %d: batches %v, want %v", c.batchSize, c.chunkBatches, got, c.want)
		}
	}
}

// TestMakeBatchesKeepsTiesInOrder checks the sort is stable, as Python's sorted is: within a chunk, examples of
// equal source length stay in their (shuffled) order.
func TestMakeBatchesKeepsTiesInOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	examples := make([]Example, 500)
	for i := range examples {
		examples[i] = Example{Src: make([]int, 1+rng.IntN(3))}
	}
	var order []int
	for _, b := range MakeBatches(examples, BatchOptions{BatchSize: 16, ChunkBatches: 100}, nil) {
		order = append(order, b.Index...)
	}
	want := make([]int, 0, len(examples))
	for n := 1; n <= 3; n++ {
		for i, ex := range examples {
			if len(ex.Src) == n {
				want = append(want, i)
			}
		}
	}
	if !reflect.DeepEqual(order, want) {
		t.Fatalf("order of examples %v,\nwant (lengths sorted, ties by position) %v", order, want)
	}
}

func TestMakeBatchesDefaultsToBatchesOf64(t *testing.T) {
	var sizes []int
	for _, b := range MakeBatches(randomExamples(130, 1), BatchOptions{}, nil) {
		sizes = append(sizes, b.Real)
	}
	if want := []int{64, 64, 2}; !reflect.DeepEqual(sizes, want) {
		t.Fatalf("batch sizes %v, want %v", sizes, want)
	}
}

// randomExamples returns n examples of random lengths; the first source id of example i is 4+i, so rows can be
// traced back to their example.
func randomExamples(n int, seed uint64) []Example {
	rng := rand.New(rand.NewPCG(seed, 1))
	ex := make([]Example, n)
	for i := range ex {
		ex[i] = Example{Src: make([]int, 1+rng.IntN(20)), Tgt: make([]int, rng.IntN(20))}
		ex[i].Src[0] = 4 + i
	}
	return ex
}

func TestEveryExampleIsBatchedOnce(t *testing.T) {
	ex := randomExamples(1003, 2)
	for _, opt := range []BatchOptions{
		{BatchSize: 10, ChunkBatches: 5, Shuffle: true},
		{BatchSize: 10, ChunkBatches: 5},
		{BatchSize: 7, ChunkBatches: 1000, Shuffle: true, FixedRows: true, RoundLen: 3},
		{BatchSize: 1},
	} {
		batches := MakeBatches(ex, opt, rand.New(rand.NewPCG(3, 3)))
		count := make([]int, len(ex))
		for _, b := range batches {
			if b.Real > opt.BatchSize || (opt.FixedRows && b.Rows != opt.BatchSize) || (!opt.FixedRows && b.Rows != b.Real) {
				t.Fatalf("%+v: batch with %d rows, %d real", opt, b.Rows, b.Real)
			}
			for r, i := range b.Index {
				if b.Src[r] != ex[i].Src[0] || b.SrcLengths[r] != len(ex[i].Src) {
					t.Fatalf("%+v: row %d of a batch does not hold example %d", opt, r, i)
				}
				count[i]++
			}
		}
		for i, n := range count {
			if n != 1 {
				t.Fatalf("%+v: example %d is in %d batches", opt, i, n)
			}
		}
	}
}

func TestShuffleIsSeeded(t *testing.T) {
	ex := randomExamples(500, 4)
	opt := BatchOptions{BatchSize: 10, ChunkBatches: 10, Shuffle: true}
	batchesFor := func(seed uint64) []Batch { return MakeBatches(ex, opt, rand.New(rand.NewPCG(seed, 0))) }
	if !reflect.DeepEqual(batchesFor(1), batchesFor(1)) {
		t.Fatal("same seed, different batches")
	}
	if reflect.DeepEqual(indexes(batchesFor(1)), indexes(batchesFor(2))) {
		t.Fatal("different seeds, same batch order")
	}
	unshuffled := indexes(MakeBatches(ex, BatchOptions{BatchSize: 10, ChunkBatches: 10}, nil))
	if reflect.DeepEqual(indexes(batchesFor(1)), unshuffled) {
		t.Fatal("Shuffle did not change the order")
	}
}

// TestShuffleUsesRngAsDocumented rebuilds the batch order by hand from the documented use of rng: shuffle the
// example indices, sort chunks, cut, shuffle the batches. Training runs are reproducible only if this holds.
func TestShuffleUsesRngAsDocumented(t *testing.T) {
	ex := randomExamples(95, 5)
	opt := BatchOptions{BatchSize: 4, ChunkBatches: 3, Shuffle: true}
	got := indexes(MakeBatches(ex, opt, rand.New(rand.NewPCG(7, 7))))

	rng := rand.New(rand.NewPCG(7, 7))
	order := make([]int, len(ex))
	for i := range order {
		order[i] = i
	}
	rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
	var want [][]int
	for start := 0; start < len(order); start += 12 {
		chunk := order[start:min(start+12, len(order))]
		slices.SortStableFunc(chunk, func(a, b int) int { return len(ex[a].Src) - len(ex[b].Src) })
		for first := 0; first < len(chunk); first += 4 {
			want = append(want, chunk[first:min(first+4, len(chunk))])
		}
	}
	rng.Shuffle(len(want), func(i, j int) { want[i], want[j] = want[j], want[i] })
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("batches\n%v\nwant\n%v", got, want)
	}
}

func TestOneChunkSortsAllSourceLengths(t *testing.T) {
	ex := randomExamples(500, 6)
	// Without shuffling, one chunk covering everything gives batches in order of source length.
	prev := 0
	for _, b := range MakeBatches(ex, BatchOptions{BatchSize: 10, ChunkBatches: 50}, nil) {
		for _, n := range b.SrcLengths {
			if n < prev {
				t.Fatalf("source length %d after %d", n, prev)
			}
			prev = n
		}
	}
	// With shuffling, each batch is still a sorted slice of the one sorted chunk: sorted inside, and the
	// batches' ranges of lengths do not interleave.
	batches := MakeBatches(ex, BatchOptions{BatchSize: 10, ChunkBatches: 50, Shuffle: true}, rand.New(rand.NewPCG(8, 8)))
	slices.SortFunc(batches, func(a, b Batch) int {
		return cmp.Or(a.SrcLengths[0]-b.SrcLengths[0], a.SrcLengths[a.Real-1]-b.SrcLengths[b.Real-1])
	})
	prev = 0
	for _, b := range batches {
		if !slices.IsSorted(b.SrcLengths) || b.SrcLengths[0] < prev {
			t.Fatalf("batch lengths %v after a batch ending at %d", b.SrcLengths, prev)
		}
		prev = b.SrcLengths[len(b.SrcLengths)-1]
	}
}

func TestMakeBatchesWithShuffleNeedsRng(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("Shuffle with a nil rng did not panic")
		}
	}()
	MakeBatches(randomExamples(3, 1), BatchOptions{Shuffle: true}, nil)
}

func TestMakeBatchesOfNothing(t *testing.T) {
	if got := MakeBatches(nil, BatchOptions{Shuffle: true}, rand.New(rand.NewPCG(1, 1))); len(got) != 0 {
		t.Fatalf("%d batches from no examples", len(got))
	}
}

// TestTokenBudgetBatches checks batching by a token budget: every example lands in exactly one batch; a batch's
// rows times its longer padded side stay within the budget unless it is a single pair longer than the budget;
// no batch exceeds BatchSize rows; and a batch could not have taken the next pair of its chunk.
func TestTokenBudgetBatches(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 5))
	examples := make([]Example, 500)
	for i := range examples {
		examples[i] = Example{Src: make([]int, 1+rng.IntN(30)), Tgt: make([]int, 1+rng.IntN(30))}
	}
	examples[17].Src = make([]int, 90) // longer than the budget: a batch of its own
	for _, opt := range []BatchOptions{
		{BatchSize: 64, BatchTokens: 80, ChunkBatches: 4, RoundLen: 1, Shuffle: true},
		{BatchSize: 8, BatchTokens: 400, ChunkBatches: 100, RoundLen: 4, Shuffle: true},
	} {
		batches := MakeBatches(examples, opt, rand.New(rand.NewPCG(1, 2)))
		seen := make([]int, len(examples))
		for bi, b := range batches {
			for _, i := range b.Index {
				seen[i]++
			}
			side := max(b.SrcLen, b.TgtLen)
			if b.Real > 1 && b.Real*side > opt.BatchTokens {
				t.Fatalf("%+v: batch %d has %d rows × %d = %d tokens > budget %d", opt, bi, b.Real, side, b.Real*side, opt.BatchTokens)
			}
			if b.Real > opt.BatchSize {
				t.Fatalf("%+v: batch %d has %d rows > BatchSize %d", opt, bi, b.Real, opt.BatchSize)
			}
		}
		for i, n := range seen {
			if n != 1 {
				t.Fatalf("%+v: example %d is in %d batches", opt, i, n)
			}
		}
		if len(batches) >= len(examples) {
			t.Fatalf("%+v: %d batches for %d examples: the budget packs nothing", opt, len(batches), len(examples))
		}
	}
}

// TestTokenBudgetFillsBatches checks on sorted lengths that each batch takes as many pairs as the budget allows.
func TestTokenBudgetFillsBatches(t *testing.T) {
	var examples []Example
	for _, n := range []int{2, 2, 3, 3, 3, 5, 9} { // target n → side n+1
		examples = append(examples, Example{Src: make([]int, 1), Tgt: make([]int, n)})
	}
	// Budget 12: [3,3,4 → 3×4=12] [4,4 → 8; +6 would be 3×6=18] [6 → +10 is 2×10=20] [10]
	got := MakeBatches(examples, BatchOptions{BatchSize: 64, BatchTokens: 12}, nil)
	var rows []int
	for _, b := range got {
		rows = append(rows, b.Real)
	}
	if want := []int{3, 2, 1, 1}; !slices.Equal(rows, want) {
		t.Fatalf("rows per batch %v, want %v", rows, want)
	}
}
