package model

import (
	"context"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"

	"github.com/attend-nmt/attend/align"
	"github.com/attend-nmt/attend/data"
	"github.com/attend-nmt/attend/kernels"
)

// guidedTransformer is a float64 Transformer of two blocks of two heads (width 8) whose second head of the first
// block is its alignment head.
func guidedTransformer(t *testing.T, dropout float64) *Seq2Seq[float64] {
	cfg := ModelConfig{Type: TypeTransformer, DModel: 8, Heads: 2, FF: 12, Layers: 2, AttentionLayer: 1, AlignmentHead: 2, Dropout: dropout}
	return newTestModel[float64](t, cfg, 9, 11, 1)
}

// TestTransformerForcedAttentionIsWhatGuidedAlignmentTrains checks that the attention a Transformer reports
// (Force, as align and translate --alignments read it) is the head guided alignment trains: that head's weights
// give, through align.GuideLoss, the guided loss of a training step without dropout; the other head's do not;
// and the guided term changes the gradient.
func TestTransformerForcedAttentionIsWhatGuidedAlignmentTrains(t *testing.T) {
	m := guidedTransformer(t, 0)
	b := randomBatch(rand.New(rand.NewPCG(5, 6)), 9, 11, []int{3, 1, 2, 0}, []int{2, 3, 1, 0})
	guide := make([]float64, b.TgtLen*b.Rows*b.SrcLen)
	for r := 0; r < b.Real; r++ {
		align.FillGuide(guide, b.Rows, b.SrcLen, b.TgtLen, r, guideLinks(b.Index[r]))
	}
	tokens := 0
	for _, y := range b.TgtOut {
		if y != data.PadID {
			tokens++
		}
	}
	// head j's weights (T, B, S) time-major, from what Force reports: Heads[j][t] per row, 0 past the source;
	// Attention must be head 2's
	forced := m.Force(b)
	head := func(j int) []float64 {
		w := make([]float64, len(guide))
		for r, f := range forced {
			if len(f.Heads) != 2 {
				t.Fatalf("row %d: %d heads reported, want 2", r, len(f.Heads))
			}
			for step, row := range f.Heads[j] {
				for i, a := range row {
					w[(step*b.Rows+r)*b.SrcLen+i] = float64(a)
				}
				if j == 1 && !slices.Equal(f.Attention[step], row) {
					t.Fatalf("row %d step %d: reported attention %v, head %d's %v", r, step, f.Attention[step], j+1, row)
				}
			}
		}
		return w
	}
	want, other := align.GuideLoss(head(1), guide)/float64(tokens), align.GuideLoss(head(0), guide)/float64(tokens)
	tr := NewTrainer(m, 1e-3, 0, 2)
	tr.Guide, tr.GuideWeight = guideLinks, 1
	res, err := tr.Gradients(b, rand.New(rand.NewPCG(9, 9)))
	if err != nil {
		t.Fatal(err)
	}
	guided := append([]float64(nil), tr.Grads.Flat()...)
	// (float32 reports: agreement to about 1e-7 of a loss of order 1)
	if math.Abs(res.Guided-want) > 1e-6 || math.Abs(res.Guided-other) < 1e-3 {
		t.Errorf("training's guided loss %.9g; the reported head's %.9g, the other head's %.9g", res.Guided, want, other)
	}
	tr.Guide = nil
	if _, err := tr.Gradients(b, rand.New(rand.NewPCG(9, 9))); err != nil {
		t.Fatal(err)
	}
	var change float64
	for i, g := range tr.Grads.Flat() {
		change = math.Max(change, math.Abs(g-guided[i]))
	}
	if change < 1e-4 {
		t.Errorf("the guided term changes the gradient by only %g", change)
	}
}

// TestGuidedTransformerHeadLearnsTheLinks trains a tiny Transformer on the reversal corpus toward diagonal links
// (source word i with target word i: not the alignment reversal needs, so no head finds it unguided) for 150
// steps, with guided alignment and without, and counts the linked target words whose reported head (the
// alignment head, model.alignment_head) puts its largest weight on the linked source word: nearly all with
// guidance, far fewer without.
func TestGuidedTransformerHeadLearnsTheLinks(t *testing.T) {
	agreement := func(guided bool) float64 {
		cfg := tinyConfig()
		cfg.Model = tinyTransformer(cfg.Model)
		cfg.Model.AlignmentHead = 2
		cfg.Train.MaxSteps = 150
		pairs := tinyCorpus(24, 1)
		m, examples := tinySetup(t, cfg, pairs)
		opts := TrainOptions{Config: cfg, Corpus: data.Examples(examples), Model: m, Out: filepath.Join(t.TempDir(), "g.ckpt")}
		if guided {
			cfg.Train.GuidedAlignment, cfg.Train.GuidedAlignmentWeight = "diagonal.align", 1
			opts.Config = cfg
			opts.Guide = diagonalLinks(examples)
		}
		if _, err := Train(context.Background(), opts); err != nil {
			t.Fatal(err)
		}
		right, links := 0, 0
		for _, b := range data.MakeBatches(examples, data.BatchOptions{BatchSize: 16}, nil) {
			for r, f := range m.Force(&b) {
				for j := range min(len(examples[b.Index[r]].Src), len(examples[b.Index[r]].Tgt)) {
					links++
					if kernels.Argmax(f.Attention[j]) == j {
						right++
					}
				}
			}
		}
		return float64(right) / float64(links)
	}
	with, without := agreement(true), agreement(false)
	t.Logf("the alignment head's argmax is the linked word for %.0f%% of the links with guidance, %.0f%% without", 100*with, 100*without)
	if with < 0.9 || without > with-0.3 {
		t.Fatalf("the alignment head agrees with %.0f%% of the links with guidance and %.0f%% without; want at least 90%% and 30 points more", 100*with, 100*without)
	}
}

// diagonalLinks links source word j with target word j of each example, as far as the shorter side goes.
func diagonalLinks(examples []data.Example) func(i int) []align.Link {
	return func(i int) []align.Link {
		var links []align.Link
		for j := range min(len(examples[i].Src), len(examples[i].Tgt)) {
			links = append(links, align.Link{Src: j, Tgt: j})
		}
		return links
	}
}
