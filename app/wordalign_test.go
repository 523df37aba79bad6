package app

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/attend-nmt/attend/align"
	"github.com/attend-nmt/attend/data"
	"github.com/attend-nmt/attend/synth"
	"github.com/attend-nmt/attend/wordalign"
)

// AlignStatistical on the synthetic corpus, as two files and as one " ||| " file: the same links, written as
// they score, and close to the generator's gold.
func TestAlignStatisticalWritesLinksThatScore(t *testing.T) {
	dir, bars, tr := synthBars(t, 7)
	f, err := os.Open(filepath.Join(dir, "train.align"))
	if err != nil {
		t.Fatal(err)
	}
	gold, err := align.ReadPharaoh(f, "train.align", false)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	var outputs []string
	for _, corpus := range []Corpus{{Src: filepath.Join(dir, "train.src"), Tgt: filepath.Join(dir, "train.tgt")}, {TSV: bars}} {
		var out bytes.Buffer
		scores, err := AlignStatistical(context.Background(), StatisticalAlignRequest{Corpus: corpus,
			Tokenizer: data.WhitespaceTokenizer{}, Options: wordalign.DefaultOptions(), Sym: align.GrowDiagFinalAnd,
			Output: &out, Gold: gold})
		if err != nil {
			t.Fatal(err)
		}
		outputs = append(outputs, out.String())
		written, err := align.ReadPharaoh(&out, "output", false)
		if err != nil {
			t.Fatal(err)
		}
		var again align.Scores
		for k := range written {
			again.Add(written[k], gold[k])
		}
		if again != scores || len(written) != len(tr) {
			t.Errorf("%s: %d lines scoring %+v, AlignStatistical returned %+v", corpus, len(written), again, scores)
		}
		if scores.AER() > 0.05 {
			t.Errorf("%s: AER %.4f on the synthetic corpus, want at most 0.05", corpus, scores.AER())
		}
	}
	if outputs[0] != outputs[1] {
		t.Error("two files and one ' ||| ' file of the same pairs gave different links")
	}
	// A gold of the first lines scores those; one longer than the corpus is an error.
	var out bytes.Buffer
	first, err := AlignStatistical(context.Background(), StatisticalAlignRequest{Corpus: Corpus{TSV: bars},
		Tokenizer: data.WhitespaceTokenizer{}, Options: wordalign.DefaultOptions(), Sym: align.GrowDiagFinalAnd,
		Output: &out, Gold: gold[:5]})
	if err != nil {
		t.Fatal(err)
	}
	written, _ := align.ReadPharaoh(&out, "output", false)
	var want align.Scores
	for k := range 5 {
		want.Add(written[k], gold[k])
	}
	if first != want || first.Sentences != 5 {
		t.Errorf("gold of 5 lines: scores %+v, want those of the first 5 pairs %+v", first, want)
	}
	_, err = AlignStatistical(context.Background(), StatisticalAlignRequest{Corpus: Corpus{Src: filepath.Join(dir, "test.src"),
		Tgt: filepath.Join(dir, "test.tgt")}, Tokenizer: data.WhitespaceTokenizer{}, Options: wordalign.DefaultOptions(),
		Sym: align.Forward, Output: &bytes.Buffer{}, Gold: gold[:11]})
	if err == nil || !strings.Contains(err.Error(), "gold alignment has 11 lines, the corpus ("+filepath.Join(dir, "test.src")+" and "+filepath.Join(dir, "test.tgt")+") 10") {
		t.Errorf("long gold: %v", err)
	}
}

// synthBars writes the synthetic corpus of 1,000 training pairs drawn with seed into a temporary folder
// (synth.WriteFiles), and its training pairs again as one " ||| " file, bars; it returns the folder, that file
// and the training pairs.
func synthBars(t *testing.T, seed uint64) (dir, bars string, train []synth.Pair) {
	t.Helper()
	dir = t.TempDir()
	train, valid, test := synth.Split(1000, 10, 10, seed)
	if err := synth.WriteFiles(dir, train, valid, test); err != nil {
		t.Fatal(err)
	}
	var joined strings.Builder
	for _, p := range train {
		joined.WriteString(p.Src + " ||| " + p.Tgt + "\n")
	}
	bars = filepath.Join(dir, "train.src-tgt")
	if err := os.WriteFile(bars, []byte(joined.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir, bars, train
}
