package app

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/attend-nmt/attend/data"
	"github.com/attend-nmt/attend/internal/corpora"
	"github.com/attend-nmt/attend/lexicon"
	"github.com/attend-nmt/attend/model"
)

// BenchmarkTranslateMulti30k decodes test_2016_flickr greedily and with a beam of 5, over the whole vocabulary
// and with a shortlist of 100 frequent words and 20 per source word, with a checkpoint named by
// ATTEND_BENCH_MODEL (skipped without one) and reports sentences per second and the mean output length in tokens
// (a model that stops early decodes faster: the two go together). It reads test_2016_flickr.de from the
// directory named by MULTI30K, and is skipped without it.
func BenchmarkTranslateMulti30k(b *testing.B) {
	path := os.Getenv("ATTEND_BENCH_MODEL")
	if path == "" {
		b.Skip("set ATTEND_BENCH_MODEL to a Multi30k checkpoint")
	}
	dir := corpora.Multi30k(b, "test_2016_flickr.de")
	ck, err := model.Load(path)
	if err != nil {
		b.Fatal(err)
	}
	f, err := os.Open(filepath.Join(dir, "test_2016_flickr.de"))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	sents, err := data.ReadLines(f, "test_2016_flickr.de", data.NewRegexTokenizer(true))
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		beam      int
		shortlist *lexicon.ShortlistSize
	}{{1, nil}, {1, &lexicon.ShortlistSize{Frequent: 100, Best: 20}}, {5, nil}, {5, &lexicon.ShortlistSize{Frequent: 100, Best: 20}}} {
		name := fmt.Sprintf("beam%d", c.beam)
		if c.shortlist != nil {
			name += fmt.Sprintf("/shortlist=%d,%d", c.shortlist.Frequent, c.shortlist.Best)
		}
		b.Run(name, func(b *testing.B) {
			if c.shortlist != nil && ck.Model.Lexicon == nil {
				b.Skip("the model has no lexicon (add one with attend lexicon)")
			}
			words := 0
			for i := 0; i < b.N; i++ {
				trs, err := TranslateTokens(context.Background(), ck.Model, sents, DecodeOptions{MaxLen: 80, Batch: 64, Beam: c.beam, Shortlist: c.shortlist})
				if err != nil {
					b.Fatal(err)
				}
				for _, tr := range trs {
					words += len(tr.Output)
				}
			}
			b.ReportMetric(float64(len(sents)*b.N)/b.Elapsed().Seconds(), "sent/s")
			b.ReportMetric(float64(words)/float64(len(sents)*b.N), "out-tok/sent")
		})
	}
}
