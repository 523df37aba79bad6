package data

import (
	"math/rand/v2"
	"reflect"
	"sort"
	"testing"
)

func TestBatchLayoutIsTimeMajorWithShiftedTargets(t *testing.T) {
	examples := []Example{{Src: []int{5, 6, 7}, Tgt: []int{8}}, {Src: []int{9}, Tgt: []int{10, 11}}}
	b := MakeBatches(examples, BatchOptions{BatchSize: 2}, nil)
	if len(b) != 1 {
		t.Fatalf("%d batches", len(b))
	}
	got := b[0]
	// sorted by source length: row 0 is example 1, row 1 is example 0
	want := Batch{Rows: 2, Real: 2, SrcLen: 3, TgtLen: 3, Index: []int{1, 0}, SrcLengths: []int{1, 3},
		Src:    []int{9, 5, 0, 6, 0, 7},
		TgtIn:  []int{BOSID, BOSID, 10, 8, 11, 0},
		TgtOut: []int{10, 8, 11, EOSID, EOSID, 0},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("batch\n%+v\nwant\n%+v", got, want)
	}
	if got.TgtTokens() != 5 || !got.SrcMask(0, 0) || got.SrcMask(1, 0) {
		t.Fatal("TgtTokens or SrcMask wrong")
	}
}

func TestBatchRoundingAndFixedRows(t *testing.T) {
	examples := []Example{{Src: []int{5, 6, 7}, Tgt: []int{8}}}
	b := MakeBatches(examples, BatchOptions{BatchSize: 4, RoundLen: 4, FixedRows: true}, nil)[0]
	if b.Rows != 4 || b.Real != 1 || b.SrcLen != 4 || b.TgtLen != 4 || len(b.Src) != 16 || b.SrcLengths[3] != 0 || b.TgtTokens() != 2 {
		t.Fatalf("got %+v", b)
	}
	src := MakeBatches([]Example{{Src: []int{5}}}, BatchOptions{}, nil)[0]
	if src.TgtLen != 0 || src.TgtIn != nil {
		t.Fatalf("source-only batch has targets: %+v", src)
	}
}

func randomExamples(n int) []Example {
	rng := rand.New(rand.NewPCG(1, 1))
	ex := make([]Example, n)
	for i := range ex {
		ex[i] = Example{Src: make([]int, 1+rng.IntN(20)), Tgt: make([]int, 1+rng.IntN(20))}
		ex[i].Src[0] = 4 + i // identity, to follow examples through batching
	}
	return ex
}

func TestEveryExampleIsBatchedOnce(t *testing.T) {
	ex := randomExamples(1003)
	batches := MakeBatches(ex, BatchOptions{BatchSize: 10, ChunkBatches: 5, Shuffle: true}, rand.New(rand.NewPCG(3, 3)))
	var seen []int
	for _, b := range batches {
		for r, i := range b.Index {
			if b.Src[r] != ex[i].Src[0] {
				t.Fatalf("row %d of a batch does not hold example %d", r, i)
			}
			seen = append(seen, i)
		}
	}
	sort.Ints(seen)
	for i, s := range seen {
		if s != i {
			t.Fatalf("example %d batched %s", i, map[bool]string{true: "twice", false: "never"}[s < i])
		}
	}
}

func TestShuffleIsSeededAndBucketsAreSorted(t *testing.T) {
	ex := randomExamples(500)
	order := func(seed uint64) []int {
		var idx []int
		for _, b := range MakeBatches(ex, BatchOptions{BatchSize: 10, Shuffle: true}, rand.New(rand.NewPCG(seed, 0))) {
			idx = append(idx, b.Index...)
		}
		return idx
	}
	if !reflect.DeepEqual(order(1), order(1)) {
		t.Fatal("same seed, different batches")
	}
	if reflect.DeepEqual(order(1), order(2)) {
		t.Fatal("different seeds, same batches")
	}
	// One chunk covers everything without shuffling: batches come out in order of source length.
	prev := 0
	for _, b := range MakeBatches(ex, BatchOptions{BatchSize: 10}, nil) {
		for _, n := range b.SrcLengths {
			if n < prev {
				t.Fatalf("source length %d after %d", n, prev)
			}
			prev = n
		}
	}
}

func BenchmarkReadParallel(b *testing.B) {
	dir := b.TempDir()
	line := "Zwei junge, weiße Männer sind im Freien in der Nähe vieler Büsche.\n"
	var content []byte
	for i := 0; i < 10000; i++ {
		content = append(content, line...)
	}
	src := dir + "/a.de"
	writeBytes(b, src, content)
	for i := 0; i < b.N; i++ {
		if _, err := ReadParallel(src, src, NewRegexTokenizer(true)); err != nil {
			b.Fatal(err)
		}
	}
	b.SetBytes(int64(2 * len(content)))
}
