package app

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"github.com/attend-nmt/attend/kernels"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/attend-nmt/attend/data"
	"github.com/attend-nmt/attend/lexicon"
	"github.com/attend-nmt/attend/model"
)

// TestTranslateStreamMatchesTranslateTokens feeds the validation sentences of a small model trained on subwords
// (and an empty line) to TranslateStream as a server does — a few at a time, with "none waiting" answers
// between them, so that later sentences enter a batch already decoding — and requires for every sentence the
// translation TranslateTokens gives: the same words, attention, subwords and links, greedily over the whole
// vocabulary, with a shortlist, and with <unk> replaced (on a random model of words, which writes <unk> often);
// and with beam search, its n-best lists and scores included, whose sentences join a running batch too.
func TestTranslateStreamMatchesTranslateTokens(t *testing.T) {
	dir := t.TempDir()
	train, valid := writeCorpus(t, dir, 7)
	cfg := tinyTrainConfig()
	cfg.Data.Subword, cfg.Data.Merges = model.SubwordBPE, 25
	cfg.Train.MaxSteps = 30
	out := filepath.Join(dir, "m.ckpt")
	if _, err := Train(context.Background(), TrainRequest{Config: cfg, Train: train, Valid: valid, Out: out, Stdout: &bytes.Buffer{}}); err != nil {
		t.Fatal(err)
	}
	ck, err := model.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	subwords := ck.Model
	tok := Tokenizer(subwords, true)
	var validSents [][]string
	for _, line := range append(readLinesOf(t, filepath.Join(dir, "valid.src")), "", "zzz unknown words") {
		validSents = append(validSents, tok.Tokenize(line))
	}
	var randomSents [][]string
	for i := range 14 {
		randomSents = append(randomSents, strings.Fields("a b c d e a c e b d"[:2*(i%6)+1]))
	}
	// The first random model of words that writes <unk>, so that replacing it shows.
	var words *model.Seq2Seq[float32]
	for seed := uint64(1); words == nil; seed++ {
		m := untrainedModel(t)
		m.Init(rand.New(rand.NewPCG(seed, 2)))
		trs, err := TranslateTokens(context.Background(), m, randomSents, DecodeOptions{MaxLen: 7, Batch: 2})
		if err != nil {
			t.Fatal(err)
		}
		for _, tr := range trs {
			if slices.Contains(tr.Output, data.UnkToken) {
				words = m
			}
		}
		if seed == 100 {
			t.Fatal("no random model of 100 writes <unk>")
		}
	}
	unks := 0
	for ci, c := range []struct {
		m     *model.Seq2Seq[float32]
		sents [][]string
		opts  DecodeOptions
	}{
		{subwords, validSents, DecodeOptions{MaxLen: 12, Batch: 3}},
		{subwords, validSents, DecodeOptions{MaxLen: 12, Batch: 4, Shortlist: &lexicon.ShortlistSize{Frequent: 5, Best: 3}}},
		{words, randomSents, DecodeOptions{MaxLen: 7, Batch: 2, Precision: kernels.PrecisionFloat32}},
		{words, randomSents, DecodeOptions{MaxLen: 7, Batch: 2, ReplaceUnk: true}},
		{subwords, validSents, DecodeOptions{MaxLen: 12, Batch: 3, Beam: 3, NBest: 2, Alpha: 0.6, Precision: kernels.PrecisionFloat32}},
		{subwords, validSents, DecodeOptions{MaxLen: 12, Batch: 2, Beam: 4, MaxLenRatio: 1.5, Shortlist: &lexicon.ShortlistSize{Frequent: 5, Best: 3}}},
		{words, randomSents, DecodeOptions{MaxLen: 7, Batch: 2, Beam: 2, NBest: 2, Beta: 0.2, ReplaceUnk: true}},
	} {
		m, sents, opts := c.m, c.sents, c.opts
		cores := ci % 2 // every other case on one core (a server's streams), the others on every core
		want, err := TranslateTokens(context.Background(), m, sents, opts)
		if err != nil {
			t.Fatal(err)
		}
		got := make([]*Translation, len(sents))
		// The answers of next: sentences 0–4, two "none waiting", 5–6, one "none waiting", then the rest one
		// by one with a "none waiting" after each.
		var script [][]int
		script = append(script, []int{0, 1, 2, 3, 4}, nil, nil, []int{5, 6}, nil)
		for i := 7; i < len(sents); i++ {
			script = append(script, []int{i}, nil)
		}
		// A "none waiting" when the batch is empty ends a stream: then it is started again, as a server does.
		next := func(room int) []StreamSentence {
			if room < 0 {
				t.Fatalf("%+v: next asked with room %d", opts, room)
			}
			for len(script) > 0 {
				ids := script[0]
				script = script[1:]
				batch := []StreamSentence{}
				for _, i := range ids {
					batch = append(batch, StreamSentence{Tokens: sents[i], Done: func(tr Translation) {
						if got[i] != nil {
							t.Errorf("sentence %d translated twice", i)
						}
						got[i] = &tr
					}})
				}
				return batch
			}
			return nil
		}
		for starts := 0; len(script) > 0; starts++ {
			if starts > len(sents) {
				t.Fatalf("%+v: started %d streams and %d answers of next are left", opts, starts, len(script))
			}
			if err := TranslateStream(m, opts, cores, next); err != nil {
				t.Fatal(err)
			}
		}
		for i := range sents {
			if got[i] == nil {
				t.Fatalf("%+v: sentence %d never came back", opts, i)
			}
			g, _ := json.Marshal(got[i])
			w, _ := json.Marshal(want[i])
			if !bytes.Equal(g, w) || fmt.Sprint(got[i].Alternatives) != fmt.Sprint(want[i].Alternatives) {
				t.Fatalf("%+v: sentence %d %q:\nstream %s %v\ntokens %s %v", opts, i, sents[i], g, got[i].Alternatives, w, want[i].Alternatives)
			}
			if !opts.ReplaceUnk && slices.Contains(want[i].Output, data.UnkToken) {
				unks++
			}
			if fmt.Sprint(got[i].Links(0)) != fmt.Sprint(want[i].Links(0)) {
				t.Fatalf("%+v: sentence %d: links %v, want %v", opts, i, got[i].Links(0), want[i].Links(0))
			}
		}
	}
	if unks == 0 {
		t.Fatal("no translation had <unk>: replacing it went untested")
	}
}

// TestTranslateStreamSharesABatchAcrossSettings gives the sentences of one beam-search stream settings of their
// own (StreamSentence.Search: alpha, n-best, max length, length ratio, coverage penalty, <unk> replacement; the
// stream's beam width), fed two at a time so that they join a running batch of each other's: each must get what
// TranslateTokens gives it alone with its settings.
func TestTranslateStreamSharesABatchAcrossSettings(t *testing.T) {
	m := untrainedModel(t)
	m.Init(rand.New(rand.NewPCG(3, 2)))
	var sents [][]string
	for i := range 12 {
		sents = append(sents, strings.Fields("a b c d e a c e b d"[:2*(i%6)+1]))
	}
	base := DecodeOptions{MaxLen: 7, Batch: 3, Beam: 3}
	variants := []DecodeOptions{base, {MaxLen: 5, Batch: 3, Beam: 3, NBest: 2, Alpha: 0.6},
		{MaxLen: 7, Batch: 3, Beam: 3, NBest: 3, Beta: 0.2, MaxLenRatio: 1.5, ReplaceUnk: true}}
	got := make([]*Translation, len(sents))
	var waiting []StreamSentence
	for i, s := range sents {
		waiting = append(waiting, StreamSentence{Tokens: s, Search: &variants[i%len(variants)], Done: func(tr Translation) { got[i] = &tr }})
	}
	for cores := range 2 {
		clear(got)
		w := waiting
		if err := TranslateStream(m, base, cores, func(int) []StreamSentence {
			if len(w) == 0 {
				return nil
			}
			n := min(2, len(w))
			next := w[:n]
			w = w[n:]
			return next
		}); err != nil {
			t.Fatal(err)
		}
		for i := range sents {
			want, err := TranslateTokens(context.Background(), m, sents[i:i+1], variants[i%len(variants)])
			if err != nil {
				t.Fatal(err)
			}
			if got[i] == nil {
				t.Fatalf("sentence %d never came back", i)
			}
			g, _ := json.Marshal(got[i])
			wj, _ := json.Marshal(want[0])
			if !bytes.Equal(g, wj) || fmt.Sprint(got[i].Alternatives) != fmt.Sprint(want[0].Alternatives) {
				t.Fatalf("cores %d, sentence %d with %+v:\nstream %s %v\nalone  %s %v", cores, i, variants[i%len(variants)], g, got[i].Alternatives, wj, want[0].Alternatives)
			}
		}
	}
}
