package model

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/attend-nmt/attend/data"
	"github.com/attend-nmt/attend/decoder"
)

// TestEnsembleRefusesModelsThatReadDifferentText: checkpoints of other architectures but the same vocabularies
// make an ensemble; one whose target vocabulary, lowercasing or subword merges differ is refused with both
// checkpoints and the difference named.
func TestEnsembleRefusesModelsThatReadDifferentText(t *testing.T) {
	cfg := tinyConfig()
	pairs := tinyCorpus(40, 1)
	a, _ := tinySetup(t, cfg, pairs)
	other := cfg
	other.Model.DecHidden, other.Model.Attention, other.Model.InputFeeding = 48, "general", true
	b, _ := tinySetup(t, other, pairs)
	ck := func(c Config, m *Seq2Seq[float32]) *Checkpoint { return &Checkpoint{Config: c, Model: m} }
	if _, err := NewEnsemble([]string{"a.ckpt", "b.ckpt"}, []*Checkpoint{ck(cfg, a), ck(other, b)}); err != nil {
		t.Fatalf("two architectures over the same vocabularies: %v", err)
	}

	fewer, _ := tinySetup(t, cfg, tinyCorpus(40, 1)[:2])
	cased := cfg
	cased.Data.Lowercase = false
	merged, _ := tinySetup(t, cfg, pairs)
	merged.Subwords = &data.BPE{Merges: [][2]string{{"a", "b</w>"}}}
	for _, tc := range []struct {
		name string
		c    *Checkpoint
		want []string
	}{
		{"vocabularies", ck(cfg, fewer), []string{"different source vocabularies (14 tokens and ", "the first difference at id "}},
		{"lowercasing", ck(cased, b), []string{"data.lowercase true → false"}},
		{"subword merges", ck(cfg, merged), []string{"different subword merges (no subword merges, 1 BPE merges)"}},
	} {
		_, err := NewEnsemble([]string{"a.ckpt", "c.ckpt"}, []*Checkpoint{ck(cfg, a), tc.c})
		if err == nil {
			t.Fatalf("%s: an ensemble was made", tc.name)
		}
		for _, want := range append(tc.want, "a.ckpt and c.ckpt read or write different text") {
			if !strings.Contains(err.Error(), want) {
				t.Fatalf("%s: error %q lacks %q", tc.name, err, want)
			}
		}
	}
}

// TestEnsembleOfAModelWithItself: the mean of a model's log-probabilities with themselves is those
// log-probabilities, so an ensemble of a model twice translates as the model alone, greedily and with beam
// search (n-best scores to the last bit: x and (x+x)/2 are the same float; a length ratio makes the sentences
// leave the beam's batch at different steps); so does Single.
func TestEnsembleOfAModelWithItself(t *testing.T) {
	cfg := tinyConfig()
	pairs := tinyCorpus(40, 1)
	m, examples := tinySetup(t, cfg, pairs)
	m.Init(rand.New(rand.NewPCG(5, 5)))
	ck := &Checkpoint{Config: cfg, Model: m}
	twice, err := NewEnsemble([]string{"m.ckpt", "m.ckpt"}, []*Checkpoint{ck, ck})
	if err != nil {
		t.Fatal(err)
	}
	b := data.MakeBatches(examples[:7], data.BatchOptions{BatchSize: 7}, nil)[0]
	opts := decoder.BeamOptions{Width: 4, NBest: 4, MaxLen: 12, MaxLenRatio: 1.5, Alpha: 0.6, Beta: 0.2}
	want, err := beamOf(m, &b, opts)
	if err != nil {
		t.Fatal(err)
	}
	greedy := m.Greedy(&b, 12)
	for name, e := range map[string]*Ensemble{"twice": twice, "single": Single(m)} {
		got, err := e.Beam(&b, opts, decoder.Output[float32]{})
		if err != nil {
			t.Fatal(err)
		}
		for s := range want[:b.Real] {
			for i, w := range want[s] {
				if g := got[s][i]; !slices.Equal(g.Tokens, w.Tokens) || g.LogProb != w.LogProb || g.Score != w.Score {
					t.Fatalf("%s, sentence %d, hypothesis %d: %v (log p %v, score %v); the model alone %v (%v, %v)", name, s, i, g.Tokens, g.LogProb, g.Score, w.Tokens, w.LogProb, w.Score)
				}
			}
		}
		job := &Job{Batch: &b, IDs: []int{0, 1, 2, 3, 4, 5, 6}}
		hyps := make([]decoder.Hypothesis, b.Real)
		if err := e.Translate(Search{MaxLen: 12, Rows: 3}, func() *Job {
			next := job
			job = nil
			return next
		}, func(id int, list []decoder.Scored) { hyps[id] = list[0].Hypothesis }); err != nil {
			t.Fatal(err)
		}
		for r, h := range hyps {
			if !slices.Equal(h.Tokens, greedy[r].Tokens) {
				t.Fatalf("%s, greedy, sentence %d: %v; the model alone %v", name, r, h.Tokens, greedy[r].Tokens)
			}
		}
	}
}

// TestEnsembleOfTransformers: two Transformers over the same vocabularies make an ensemble; the ensemble of one
// with itself translates as it alone (greedily and with beam search, n-best scores to the last bit), and the
// ensemble of two differs from the first model alone in some sentence; a recurrent model and a Transformer
// translate together, with beam search and a batch at a time.
func TestEnsembleOfTransformers(t *testing.T) {
	cfg := tinyConfig()
	cfg.Model = tinyTransformer(cfg.Model)
	pairs := tinyCorpus(40, 1)
	a, examples := tinySetup(t, cfg, pairs)
	other := cfg
	other.Model.DModel, other.Model.Heads, other.Train.Seed = 8, 1, cfg.Train.Seed+1
	b, _ := tinySetup(t, other, pairs)
	ck := func(c Config, m *Seq2Seq[float32]) *Checkpoint { return &Checkpoint{Config: c, Model: m} }
	two, err := NewEnsemble([]string{"a.ckpt", "b.ckpt"}, []*Checkpoint{ck(cfg, a), ck(other, b)})
	if err != nil {
		t.Fatalf("two Transformers over the same vocabularies: %v", err)
	}
	twice, err := NewEnsemble([]string{"a.ckpt", "a.ckpt"}, []*Checkpoint{ck(cfg, a), ck(cfg, a)})
	if err != nil {
		t.Fatal(err)
	}
	batch := data.MakeBatches(examples[:7], data.BatchOptions{BatchSize: 7}, nil)[0]
	opts := decoder.BeamOptions{Width: 3, NBest: 3, MaxLen: 12, Alpha: 0.6, Beta: 0.2}
	want, err := decoder.Beam([]decoder.Session[float32]{a.Transformer.Session(a.EncodeTransformer(&batch))}, batch.SrcLengths, batch.SrcLen,
		a.TgtVocab.Size(), data.BOSID, data.EOSID, opts, decoder.Output[float32]{})
	if err != nil {
		t.Fatal(err)
	}
	greedy := a.Greedy(&batch, 12)
	differs := false
	for name, e := range map[string]*Ensemble{"twice": twice, "single": Single(a), "two": two} {
		got, err := e.Beam(&batch, opts, decoder.Output[float32]{})
		if err != nil {
			t.Fatal(err)
		}
		hyps, err := e.Greedy(&batch, 12, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(hyps) != batch.Real {
			t.Fatalf("%s: %d greedy hypotheses of %d sentences", name, len(hyps), batch.Real)
		}
		for s := range want[:batch.Real] {
			same := slices.Equal(hyps[s].Tokens, greedy[s].Tokens)
			for i, w := range want[s] {
				g := got[s][i]
				same = same && slices.Equal(g.Tokens, w.Tokens) && g.LogProb == w.LogProb && g.Score == w.Score
			}
			if name == "two" {
				differs = differs || !same
			} else if !same {
				t.Fatalf("%s, sentence %d: greedy %v, beam %v; the model alone %v, %v", name, s, hyps[s].Tokens, got[s], greedy[s].Tokens, want[s])
			}
		}
	}
	if !differs {
		t.Error("the ensemble of two Transformers translates every sentence as the first alone")
	}

	rec, _ := tinySetup(t, tinyConfig(), pairs)
	for _, order := range [][2]*Checkpoint{{ck(cfg, a), ck(tinyConfig(), rec)}, {ck(tinyConfig(), rec), ck(cfg, a)}} {
		mixed, err := NewEnsemble([]string{"x.ckpt", "y.ckpt"}, order[:])
		if err != nil {
			t.Fatalf("an ensemble of a recurrent model and a Transformer: %v", err)
		}
		if _, err := mixed.Beam(&batch, opts, decoder.Output[float32]{}); err != nil {
			t.Fatal(err)
		}
		hyps, err := mixed.Greedy(&batch, 12, nil)
		if err != nil || len(hyps) != batch.Real {
			t.Fatalf("greedy of the mixed ensemble: %d hypotheses, %v", len(hyps), err)
		}
		// Translate's greedy search (a running batch where every model's Session is a Joiner, else a job at a
		// time) gives every sentence what Greedy gives its batch.
		job := &Job{Batch: &batch, IDs: []int{0, 1, 2, 3, 4, 5, 6}}
		if err := mixed.Translate(Search{MaxLen: 12, Rows: 3}, func() *Job {
			next := job
			job = nil
			return next
		}, func(id int, list []decoder.Scored) {
			if h := list[0].Hypothesis; !slices.Equal(h.Tokens, hyps[id].Tokens) {
				t.Fatalf("mixed ensemble, Translate, sentence %d: %v; Greedy %v", id, h.Tokens, hyps[id].Tokens)
			}
		}); err != nil {
			t.Fatal(err)
		}
	}
}
