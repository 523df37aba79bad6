package model

import (
	"math/rand/v2"
	"testing"

	"github.com/attend-nmt/attend/data"
	"github.com/attend-nmt/attend/dist"
)

// TestReserveSizesTheScratchAndChangesNothing trains on mixed batch shapes with dropout, once after Reserve for
// the largest shape and once without, and requires that after Reserve the shared scratch never grows, and that
// both runs end with bit-identical weights.
func TestReserveSizesTheScratchAndChangesNothing(t *testing.T) {
	cfg := tinyConfig()
	cfg.Model.Dropout = 0.2
	cfg.Model.Layers = 2
	_, examples := tinySetup(t, cfg, tinyCorpus(40, 9))
	batches := data.MakeBatches(examples, data.BatchOptions{BatchSize: 8, ChunkBatches: 2, Shuffle: true}, rand.New(rand.NewPCG(1, 1)))
	var rows, srcLen, tgtLen int
	shapes := map[shape]bool{}
	for _, b := range batches {
		rows, srcLen, tgtLen = max(rows, b.Rows), max(srcLen, b.SrcLen), max(tgtLen, b.TgtLen)
		shapes[shape{b.Rows, b.SrcLen, b.TgtLen}] = true
	}
	if len(shapes) < 3 {
		t.Fatalf("only %d batch shapes; want at least 3 to make the scratch grow", len(shapes))
	}
	train := func(reserve bool) ([]float32, *Trainer[float32]) {
		mm, _ := tinySetup(t, cfg, tinyCorpus(40, 9))
		tr := NewTrainer(mm, 1e-2, 1, 2)
		if reserve {
			if err := tr.Reserve(rows, srcLen, tgtLen); err != nil {
				t.Fatal(err)
			}
		}
		reserved := tr.workers[0].arena.Len()
		for i := range batches {
			if _, err := tr.Step(&batches[i], rand.New(rand.NewPCG(uint64(i), 2)), dist.Single{}); err != nil {
				t.Fatal(err)
			}
			if reserve && tr.workers[0].arena.Len() != reserved {
				t.Fatalf("batch %d (%d×%d×%d): the scratch grew from %d to %d values after Reserve(%d, %d, %d)",
					i, batches[i].Rows, batches[i].SrcLen, batches[i].TgtLen, reserved, tr.workers[0].arena.Len(), rows, srcLen, tgtLen)
			}
		}
		return append([]float32(nil), mm.Params.Flat()...), tr
	}
	with, _ := train(true)
	without, tr := train(false)
	if tr.workers[0].arena.Len() == 0 {
		t.Fatal("the trainer's scratch is empty: the fused ops are not in use")
	}
	for i := range with {
		if with[i] != without[i] {
			t.Fatalf("weight %d is %g after Reserve and %g without", i, with[i], without[i])
		}
	}
}
