package app

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/attend-nmt/attend/data"
	"github.com/attend-nmt/attend/model"
)

// BenchmarkTranslateMulti30k decodes test_2016_flickr greedily and with a beam of 5 with a checkpoint named by
// ATTEND_BENCH_MODEL (skipped without one) and reports sentences per second and the mean output length in tokens
// (a model that stops early decodes faster: the two go together).
func BenchmarkTranslateMulti30k(b *testing.B) {
	path := os.Getenv("ATTEND_BENCH_MODEL")
	if path == "" {
		b.Skip("set ATTEND_BENCH_MODEL to a Multi30k checkpoint")
	}
	ck, err := model.Load(path)
	if err != nil {
		b.Fatal(err)
	}
	f, err := os.Open("../../shared/data/multi30k/test_2016_flickr.de")
	if err != nil {
		b.Skip(err)
	}
	defer f.Close()
	sents, err := data.ReadLines(f, "test_2016_flickr.de", data.NewRegexTokenizer(true))
	if err != nil {
		b.Fatal(err)
	}
	for _, beam := range []int{1, 5} {
		b.Run(fmt.Sprintf("beam%d", beam), func(b *testing.B) {
			words := 0
			for i := 0; i < b.N; i++ {
				trs, err := TranslateTokens(context.Background(), ck.Model, sents, DecodeOptions{MaxLen: 80, Batch: 64, Beam: beam})
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
