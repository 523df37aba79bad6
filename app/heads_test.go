package app

import (
	"context"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/attend-nmt/attend/data"
	"github.com/attend-nmt/attend/model"
)

// TestMultiHeadTranslationsExportEveryHead translates with a random multi-head model, greedy and under beam
// search: each head's matrix must have the attention's shape, each of its rows must sum to 1 over the source,
// and the heads' average must be the exported attention.
func TestMultiHeadTranslationsExportEveryHead(t *testing.T) {
	words := [][]string{strings.Fields("a b c d e f g")}
	cfg := tinyTrainConfig().Model
	cfg.Attention, cfg.Heads = "multi-head", 2
	m, err := model.New[float32](cfg, data.BuildVocab(words, 1, 0), data.BuildVocab(words, 1, 0))
	if err != nil {
		t.Fatal(err)
	}
	m.Init(rand.New(rand.NewPCG(3, 0)))
	sents := [][]string{strings.Fields("a b c"), {}, strings.Fields("g f e d c b a"), strings.Fields("d")}
	for _, beam := range []int{1, 3} {
		trs, err := TranslateTokens(context.Background(), m, sents, DecodeOptions{MaxLen: 6, Batch: 2, Beam: beam, Heads: true})
		if err != nil {
			t.Fatal(err)
		}
		rows := 0
		for s, tr := range trs {
			if len(tr.Source) == 0 {
				if tr.Heads != nil {
					t.Fatalf("beam %d: an empty sentence has heads %v", beam, tr.Heads)
				}
				continue
			}
			if len(tr.Heads) != cfg.Heads {
				t.Fatalf("beam %d sentence %d: %d heads, want %d", beam, s, len(tr.Heads), cfg.Heads)
			}
			for step, avg := range tr.Attention {
				for j, head := range tr.Heads {
					if len(head) != len(tr.Attention) || len(head[step]) != len(tr.Source) {
						t.Fatalf("beam %d sentence %d head %d: %d×%d, attention %d×%d", beam, s, j, len(head), len(head[step]), len(tr.Attention), len(avg))
					}
					var sum float64
					for _, w := range head[step] {
						sum += float64(w)
					}
					if math.Abs(sum-1) > 1e-5 {
						t.Fatalf("beam %d sentence %d head %d step %d: weights sum to %v", beam, s, j, step, sum)
					}
				}
				for i, want := range avg {
					var mean float64
					for _, head := range tr.Heads {
						mean += float64(head[step][i]) / float64(len(tr.Heads))
					}
					if math.Abs(mean-float64(want)) > 1e-5 {
						t.Fatalf("beam %d sentence %d step %d word %d: heads average %v, attention %v", beam, s, step, i, mean, want)
					}
				}
				rows++
			}
		}
		if rows == 0 {
			t.Fatalf("beam %d: no attention row checked", beam)
		}
	}
}

// TestSelfAttentionWeightsAreExported translates with a random model with two self-attention blocks: each
// sentence carries, per block and head, a square matrix over its source words whose rows sum to 1.
func TestSelfAttentionWeightsAreExported(t *testing.T) {
	words := [][]string{strings.Fields("a b c d e f g")}
	cfg := tinyTrainConfig().Model
	cfg.SelfAttentionLayers, cfg.Heads = 2, 2
	m, err := model.New[float32](cfg, data.BuildVocab(words, 1, 0), data.BuildVocab(words, 1, 0))
	if err != nil {
		t.Fatal(err)
	}
	m.Init(rand.New(rand.NewPCG(5, 0)))
	sents := [][]string{strings.Fields("a b c"), strings.Fields("g f e d c b a"), {}}
	trs, err := TranslateTokens(context.Background(), m, sents, DecodeOptions{MaxLen: 5, Batch: 2, Beam: 1, Heads: true})
	if err != nil {
		t.Fatal(err)
	}
	if trs[2].SelfAttention != nil {
		t.Fatalf("an empty sentence has self-attention %v", trs[2].SelfAttention)
	}
	for s, tr := range trs[:2] {
		if len(tr.SelfAttention) != 2 {
			t.Fatalf("sentence %d: %d blocks of self-attention, want 2", s, len(tr.SelfAttention))
		}
		for l, block := range tr.SelfAttention {
			if len(block) != 2 {
				t.Fatalf("sentence %d block %d: %d heads, want 2", s, l, len(block))
			}
			for j, head := range block {
				if len(head) != len(tr.Source) {
					t.Fatalf("sentence %d block %d head %d: %d rows for %d words", s, l, j, len(head), len(tr.Source))
				}
				for i, row := range head {
					var sum float64
					for _, w := range row {
						sum += float64(w)
					}
					if len(row) != len(tr.Source) || math.Abs(sum-1) > 1e-5 {
						t.Fatalf("sentence %d block %d head %d word %d: %d weights summing to %v", s, l, j, i, len(row), sum)
					}
				}
			}
		}
	}
}
