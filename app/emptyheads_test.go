package app

import (
	"context"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/attend-nmt/attend/data"
	"github.com/attend-nmt/attend/model"
)

// TestHeadsOfEmptyTranslations translates with models whose every translation is empty (</s> always wins) and
// asks for the heads, as translate --attention does: a multi-head model and one with self-attention layers, greedy
// and under beam search. Recovering the heads used to panic ("Force of a batch without targets"); each sentence
// must now have the one row of its </s>, in its average and in each head.
func TestHeadsOfEmptyTranslations(t *testing.T) {
	words := [][]string{strings.Fields("a b c d e f g")}
	for _, c := range []struct {
		name       string
		attention  string
		selfLayers int
	}{{"multi-head", "multi-head", 0}, {"self-attention", "additive", 8}} {
		cfg := tinyTrainConfig().Model
		cfg.Attention, cfg.Heads, cfg.SelfAttentionLayers = c.attention, 2, c.selfLayers
		m, err := model.New[float32](cfg, data.BuildVocab(words, 1, 0), data.BuildVocab(words, 1, 0))
		if err != nil {
			t.Fatal(err)
		}
		m.Init(rand.New(rand.NewPCG(5, 0)))
		m.Params.Get("out.b").Data[data.EOSID] = 1e4 // every translation ends at once
		sents := [][]string{strings.Fields("a b c"), {}, strings.Fields("g f e d")}
		for _, beam := range []int{1, 3} {
			trs, err := TranslateTokens(context.Background(), m, sents, DecodeOptions{MaxLen: 6, Batch: 4, Beam: beam, Heads: true})
			if err != nil {
				t.Fatalf("%s, beam %d: %v", c.name, beam, err)
			}
			for s, tr := range trs {
				if len(tr.Output) != 0 {
					t.Fatalf("%s, beam %d, sentence %d: output %q, want none", c.name, beam, s, tr.Output)
				}
				if len(tr.Source) == 0 {
					continue
				}
				if len(tr.Attention) != 1 || len(tr.Attention[0]) != len(tr.Source) {
					t.Fatalf("%s, beam %d, sentence %d: attention %v, want the one row of </s>", c.name, beam, s, tr.Attention)
				}
				heads := tr.Heads
				if c.selfLayers > 0 {
					if len(tr.SelfAttention) != c.selfLayers {
						t.Fatalf("%s, beam %d, sentence %d: %d self-attention blocks, want %d", c.name, beam, s, len(tr.SelfAttention), c.selfLayers)
					}
					continue // one head of attention over the source: no Heads
				}
				if len(heads) != cfg.Heads {
					t.Fatalf("%s, beam %d, sentence %d: %d heads, want %d", c.name, beam, s, len(heads), cfg.Heads)
				}
				for j, h := range heads {
					if len(h) != 1 || len(h[0]) != len(tr.Source) {
						t.Fatalf("%s, beam %d, sentence %d, head %d: %v, want one row of %d weights", c.name, beam, s, j, h, len(tr.Source))
					}
				}
			}
		}
	}
}
