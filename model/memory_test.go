package model

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"
	"time"

	"github.com/attend-nmt/attend/data"
	"github.com/attend-nmt/attend/dist"
	"github.com/attend-nmt/attend/kernels"
)

// liveHeap is the heap in use after a full collection.
func liveHeap() int64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}

// wordVocab is a vocabulary of n entries, the specials included.
func wordVocab(n int) *data.Vocab {
	words := make([]string, n-4)
	for i := range words {
		words[i] = fmt.Sprint("w", i)
	}
	return data.BuildVocab([][]string{words}, 1, 0)
}

// memoryTolerance is how far TrainingMemory may be from the heap that training takes (measured: within 7%).
const memoryTolerance = 0.20

// TestTrainingMemoryMatchesTheHeap builds small models of several shapes, makes one training step on the
// largest batch their config allows, and compares the live heap it took (model, trainer, graph and scratch)
// with TrainingMemory's estimate, which must be within memoryTolerance.
func TestTrainingMemoryMatchesTheHeap(t *testing.T) {
	for _, c := range []struct {
		name                              string
		emb, enc, dec, vocab, batch, maxL int
		layers, self                      int
		attention                         string
		dropout                           float64
		feeding                           bool
		workers                           int
		transformer                       bool // model.type transformer: width emb, model.ff 4×emb, model.layers blocks
	}{
		{"additive", 64, 64, 128, 2000, 32, 30, 1, 0, "additive", 0.1, false, 1, false},
		{"multi-head, 2 layers, input feeding", 64, 64, 128, 1000, 64, 20, 2, 0, "multi-head", 0.2, true, 1, false},
		{"self-attention", 32, 64, 64, 1000, 16, 30, 1, 2, "dot", 0, false, 1, false},
		{"concat, large vocabulary", 32, 32, 64, 6000, 32, 30, 1, 0, "concat", 0.1, false, 1, false},
		{"additive, 2 workers", 64, 64, 128, 2000, 32, 30, 1, 0, "additive", 0.1, false, 2, false},
		{"multi-head, 2 layers, 3 workers", 64, 64, 128, 1000, 64, 20, 2, 0, "multi-head", 0.2, true, 3, false},
		{"transformer", 64, 0, 0, 2000, 32, 30, 2, 0, "additive", 0.1, false, 1, true},
		{"transformer, 2 workers", 64, 0, 0, 2000, 32, 30, 2, 0, "additive", 0.1, false, 2, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := tinyConfig()
			cfg.Model.Emb, cfg.Model.EncHidden, cfg.Model.DecHidden, cfg.Model.AttnDim = c.emb, c.enc, c.dec, c.emb
			cfg.Model.Attention, cfg.Model.Dropout, cfg.Model.Layers, cfg.Model.SelfAttentionLayers, cfg.Model.InputFeeding =
				c.attention, c.dropout, c.layers, c.self, c.feeding
			if c.transformer {
				cfg.Model = tinyTransformer(cfg.Model)
				cfg.Model.DModel, cfg.Model.FF, cfg.Model.Heads = c.emb, 4*c.emb, 4
			}
			cfg.Data.Batch, cfg.Data.MaxLen, cfg.Data.RoundLen = c.batch, c.maxL, 2
			src, tgt := wordVocab(c.vocab), wordVocab(c.vocab)
			est, err := TrainingMemory(cfg, src, tgt, c.workers, kernels.Products{})
			if err != nil {
				t.Fatal(err)
			}
			before := liveHeap()
			m, err := New[float32](cfg.Model, src, tgt)
			if err != nil {
				t.Fatal(err)
			}
			m.Init(rand.New(rand.NewPCG(1, 0)))
			if est.Params != int64(m.Params.Len()) {
				t.Fatalf("estimated %d weights, the model has %d", est.Params, m.Params.Len())
			}
			tr := NewTrainer(m, 1e-3, 1, 4)
			tr.SetWorkers(c.workers)
			// The largest batch: data.max_len words on both sides, rounded up to data.round_len.
			rows, srcLen, tgtLen := c.batch, (c.maxL+1)/2*2, (c.maxL+2)/2*2
			b := &data.Batch{Rows: rows, Real: rows, SrcLen: srcLen, TgtLen: tgtLen, Src: make([]int, rows*srcLen),
				SrcLengths: make([]int, rows), TgtIn: make([]int, rows*tgtLen), TgtOut: make([]int, rows*tgtLen)}
			for i := range b.Src {
				b.Src[i] = 5
			}
			for r := range b.SrcLengths {
				b.SrcLengths[r] = srcLen
			}
			for i := range b.TgtIn {
				b.TgtIn[i], b.TgtOut[i] = 6, 7
			}
			if _, err := tr.Step(b, rand.New(rand.NewPCG(1, 1)), dist.Single{}); err != nil {
				t.Fatal(err)
			}
			held := liveHeap() - before
			runtime.KeepAlive(tr)
			t.Logf("estimated %s; training holds %s", est, Bytes(held))
			if ratio := float64(est.Total()) / float64(held); ratio < 1-memoryTolerance || ratio > 1+memoryTolerance {
				t.Fatalf("estimated %s, training holds %s (ratio %.2f, want within %.0f%%)", est, Bytes(held), ratio, 100*memoryTolerance)
			}
		})
	}
}

// TestTrainingMemoryOfAnAbsurdModelAllocatesNothing estimates the model of issue 28 (every width 65536, each in
// its range): terabytes, computed at once from the shapes alone.
func TestTrainingMemoryOfAnAbsurdModelAllocatesNothing(t *testing.T) {
	cfg := Small()
	cfg.Model.Emb, cfg.Model.EncHidden, cfg.Model.DecHidden = 65536, 65536, 65536
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	before := liveHeap()
	start := time.Now()
	est, err := TrainingMemory(cfg, wordVocab(3000), wordVocab(3000), 1, kernels.Products{})
	if err != nil {
		t.Fatal(err)
	}
	if took, grew := time.Since(start), liveHeap()-before; took > time.Second || grew > 1<<20 {
		t.Fatalf("the estimate took %v and kept %s", took, Bytes(grew))
	}
	if est.Total() < 1e12 || est.Params < 1e11 {
		t.Fatalf("estimate %s, want terabytes", est)
	}
}

func TestBytesPicksAUnit(t *testing.T) {
	for _, c := range []struct {
		n    int64
		want string
	}{{0, "0 B"}, {999, "999 B"}, {1000, "1.0 kB"}, {3_400_000, "3.4 MB"}, {1_234_000_000_000, "1.2 TB"}, {9e18, "9.0 EB"}} {
		if got := Bytes(c.n); got != c.want {
			t.Errorf("Bytes(%d) = %q, want %q", c.n, got, c.want)
		}
	}
}
