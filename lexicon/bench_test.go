package lexicon

import (
	"path/filepath"
	"testing"

	"github.com/attend-nmt/attend/data"
	"github.com/attend-nmt/attend/internal/corpora"
)

// BenchmarkLearnMulti30k learns the table attend train builds for Multi30k De→En (29,000 pairs, words);
// skipped without the Multi30k directory named by MULTI30K. It reports the candidates of a shortlist of 100 frequent words and 20 per
// source word, per test_2016 sentence, against the vocabulary's size.
func BenchmarkLearnMulti30k(b *testing.B) {
	dir := corpora.Multi30k(b, "train.de", "train.en", "test_2016_flickr.de", "test_2016_flickr.en")
	tok := data.NewRegexTokenizer(true)
	pairs, err := data.ReadParallel(filepath.Join(dir, "train.de"), filepath.Join(dir, "train.en"), tok)
	if err != nil {
		b.Fatal(err)
	}
	pairs, _ = data.Filter(pairs, 50)
	var srcSents, tgtSents [][]string
	for _, p := range pairs {
		srcSents, tgtSents = append(srcSents, p.Src), append(tgtSents, p.Tgt)
	}
	src, tgt := data.BuildVocab(srcSents, 2, 0), data.BuildVocab(tgtSents, 2, 0)
	ex := data.EncodeExamples(pairs, src, tgt)
	var tab *Table
	for b.Loop() {
		if tab, err = Learn(ex, src.Size(), tgt.Size(), DefaultOptions()); err != nil {
			b.Fatal(err)
		}
	}
	test, err := data.ReadParallel(filepath.Join(dir, "test_2016_flickr.de"), filepath.Join(dir, "test_2016_flickr.en"), tok)
	if err != nil {
		b.Fatal(err)
	}
	n := 0
	var buf []int
	for _, p := range test {
		buf = tab.Candidates(src.Encode(p.Src), ShortlistSize{Frequent: 100, Best: 20}, tgt.Size(), buf)
		n += len(buf)
	}
	b.ReportMetric(float64(n)/float64(len(test)), "candidates/sent")
	b.ReportMetric(float64(tgt.Size()), "vocab")
}
