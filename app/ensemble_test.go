package app

import (
	"context"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/attend-nmt/attend/data"
	"github.com/attend-nmt/attend/decoder"
	"github.com/attend-nmt/attend/lexicon"
	"github.com/attend-nmt/attend/model"
)

// ensembleOfTwo is an untrained model and the ensemble of it with another of a different architecture (wider
// decoder, dot attention, input feeding) over the same vocabularies.
func ensembleOfTwo(t *testing.T) (*model.Seq2Seq[float32], *model.Ensemble) {
	t.Helper()
	cfg := tinyTrainConfig()
	a := untrainedModel(t)
	other := cfg
	other.Model.DecHidden, other.Model.Attention, other.Model.InputFeeding = 12, "dot", true
	b, err := model.New[float32](other.Model, a.SrcVocab, a.TgtVocab)
	if err != nil {
		t.Fatal(err)
	}
	b.Init(rand.New(rand.NewPCG(7, 0)))
	e, err := model.NewEnsemble([]string{"a.ckpt", "b.ckpt"}, []*model.Checkpoint{{Config: cfg, Model: a}, {Config: other, Model: b}})
	if err != nil {
		t.Fatal(err)
	}
	return a, e
}

// transformerEnsembleOfTwo is an untrained Transformer over untrainedModel's words and the ensemble of it with
// another Transformer of a different shape (narrower, one head, learned positions).
func transformerEnsembleOfTwo(t *testing.T) (*model.Seq2Seq[float32], *model.Ensemble) {
	t.Helper()
	words := untrainedModel(t)
	cfg := tinyTrainConfig()
	m := &cfg.Model
	m.Type, m.DModel, m.Heads, m.FF, m.Layers, m.TiedEmbeddings = model.TypeTransformer, 16, 2, 32, 2, true
	other := cfg
	other.Model.DModel, other.Model.Heads, other.Model.Positions = 8, 1, "learned"
	var models []*model.Seq2Seq[float32]
	for i, c := range []model.Config{cfg, other} {
		tf, err := model.New[float32](c.Model, words.SrcVocab, words.TgtVocab)
		if err != nil {
			t.Fatal(err)
		}
		tf.Init(rand.New(rand.NewPCG(uint64(i+3), 0)))
		models = append(models, tf)
	}
	e, err := model.NewEnsemble([]string{"a.ckpt", "b.ckpt"}, []*model.Checkpoint{{Config: cfg, Model: models[0]}, {Config: other, Model: models[1]}})
	if err != nil {
		t.Fatal(err)
	}
	return models[0], e
}

// ensembleSentences are the test sentences of the ensembles below, over untrainedModel's words.
var ensembleSentences = [][]string{{"a", "b", "c"}, {"d"}, {"e", "e", "a", "b"}, {"c", "d", "e", "a", "b"}, {"b", "a"}, {"d", "c"}, {"a"}}

// TestEnsembleTranslatesAsItsSearch: translating with DecodeOptions.Ensemble, greedily and with a beam of 3
// and n-best lists, in batches of 2, gives each sentence what the ensemble's beam search gives it alone (a beam
// of 1 is greedy search): the same words, score, alternatives and attention (the first model's), for recurrent
// models and for Transformers. The translations must differ from the first model's alone, or the option would
// not be shown to matter.
func TestEnsembleTranslatesAsItsSearch(t *testing.T) {
	t.Run("recurrent", func(t *testing.T) { testEnsembleTranslatesAsItsSearch(t, ensembleOfTwo) })
	t.Run("transformer", func(t *testing.T) { testEnsembleTranslatesAsItsSearch(t, transformerEnsembleOfTwo) })
}

// testEnsembleTranslatesAsItsSearch is TestEnsembleTranslatesAsItsSearch with the ensemble two makes.
func testEnsembleTranslatesAsItsSearch(t *testing.T, two func(*testing.T) (*model.Seq2Seq[float32], *model.Ensemble)) {
	a, e := two(t)
	for _, beam := range []int{1, 3} {
		opts := DecodeOptions{MaxLen: 8, Batch: 2, Beam: beam, Alpha: 0.5, Ensemble: e}
		if beam > 1 {
			opts.NBest = beam
		}
		got, err := TranslateTokens(context.Background(), a, ensembleSentences, opts)
		if err != nil {
			t.Fatal(err)
		}
		opts.Ensemble = nil
		alone, err := TranslateTokens(context.Background(), a, ensembleSentences, opts)
		if err != nil {
			t.Fatal(err)
		}
		differ := false
		for i, s := range ensembleSentences {
			b := data.MakeBatches([]data.Example{{Src: a.SrcVocab.Encode(s)}}, data.BatchOptions{BatchSize: 1}, nil)[0]
			lists, err := e.Beam(&b, decoder.BeamOptions{Width: beam, NBest: beam, MaxLen: 8, Alpha: 0.5}, decoder.Output[float32]{})
			if err != nil {
				t.Fatal(err)
			}
			want := lists[0]
			if g, w := got[i].Output, outputTokens(a.TgtVocab, want[0].Hypothesis, s, false); !slices.Equal(g, w) {
				t.Fatalf("beam %d, sentence %v: translated %v, the ensemble's search %v", beam, s, g, w)
			}
			if !slices.EqualFunc(got[i].Attention, want[0].Attention, slices.Equal[[]float32]) {
				t.Fatalf("beam %d, sentence %v: attention %v, the ensemble's search %v", beam, s, got[i].Attention, want[0].Attention)
			}
			if beam > 1 {
				if got[i].Score != want[0].Score || len(got[i].Alternatives) != len(want)-1 {
					t.Fatalf("beam %d, sentence %v: score %v and %d alternatives, the ensemble's search %v and %d", beam, s, got[i].Score, len(got[i].Alternatives), want[0].Score, len(want)-1)
				}
				for j, alt := range got[i].Alternatives {
					if !slices.Equal(alt.Output, outputTokens(a.TgtVocab, want[j+1].Hypothesis, s, false)) || alt.Score != want[j+1].Score {
						t.Fatalf("beam %d, sentence %v: alternative %d %v (%v), the ensemble's search %v (%v)", beam, s, j, alt.Output, alt.Score, outputTokens(a.TgtVocab, want[j+1].Hypothesis, s, false), want[j+1].Score)
					}
				}
			}
			differ = differ || !slices.Equal(got[i].Output, alone[i].Output) || got[i].Score != alone[i].Score
		}
		if !differ {
			t.Fatalf("beam %d: the ensemble translates every sentence as its first model alone", beam)
		}
	}
}

// TestEnsembleStreams: TranslateStream with an ensemble gives the translations TranslateTokens gives greedily.
func TestEnsembleStreams(t *testing.T) {
	a, e := ensembleOfTwo(t)
	opts := DecodeOptions{MaxLen: 8, Batch: 2, Beam: 1, Ensemble: e}
	want, err := TranslateTokens(context.Background(), a, ensembleSentences, opts)
	if err != nil {
		t.Fatal(err)
	}
	got := make([]Translation, len(ensembleSentences))
	var waiting []StreamSentence
	for i, s := range ensembleSentences {
		waiting = append(waiting, StreamSentence{Tokens: s, Done: func(tr Translation) { got[i] = tr }})
	}
	if err := TranslateStream(a, opts, 0, func(int) []StreamSentence {
		w := waiting
		waiting = nil
		return w
	}); err != nil {
		t.Fatal(err)
	}
	for i := range want {
		if !slices.Equal(got[i].Output, want[i].Output) || !slices.EqualFunc(got[i].Attention, want[i].Attention, slices.Equal[[]float32]) {
			t.Fatalf("sentence %v: streamed %v, translated %v", ensembleSentences[i], got[i].Output, want[i].Output)
		}
	}
}

// TestEnsembleRefusals: an ensemble refuses a shortlist, saying why, and one whose first model is not the model
// translating.
func TestEnsembleRefusals(t *testing.T) {
	a, e := ensembleOfTwo(t)
	_, err := TranslateTokens(context.Background(), a, ensembleSentences,
		DecodeOptions{MaxLen: 8, Batch: 2, Ensemble: e, Shortlist: &lexicon.ShortlistSize{Frequent: 10, Best: 5}})
	if err == nil || !strings.Contains(err.Error(), "--shortlist with 2 models: a shortlist scores") {
		t.Fatalf("a shortlist with an ensemble: %v", err)
	}
	_, err = TranslateTokens(context.Background(), untrainedModel(t), ensembleSentences, DecodeOptions{MaxLen: 8, Batch: 2, Ensemble: e})
	if err == nil || !strings.Contains(err.Error(), "first model is not the model translating") {
		t.Fatalf("an ensemble led by another model: %v", err)
	}
}
