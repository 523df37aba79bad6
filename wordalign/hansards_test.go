package wordalign

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/attend-nmt/attend/align"
	"github.com/attend-nmt/attend/data"
	"github.com/attend-nmt/attend/internal/corpora"
)

// hansards reads the corpus of TestHansardsAER: Multi30k En–Fr train, then the Hansards pairs, whose first
// lines the gold covers. It returns the pairs, the index of the first Hansards pair and the gold.
func hansards(t *testing.T) ([]data.Pair, int, [][]align.Link) {
	hansards := corpora.Hansards(t, "enfr.src-tgt", "enfr.dev-gold")
	m30k := corpora.Multi30k(t, "train.en", "train.fr")
	pairs, err := data.ReadParallel(filepath.Join(m30k, "train.en"), filepath.Join(m30k, "train.fr"), data.NewRegexTokenizer(true))
	if err != nil {
		t.Fatal(err)
	}
	test, err := data.ReadTSV(filepath.Join(hansards, "enfr.src-tgt"), data.WhitespaceTokenizer{Lowercase: true})
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(filepath.Join(hansards, "enfr.dev-gold"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gold, err := align.ReadPharaoh(f, "enfr.dev-gold", true)
	if err != nil {
		t.Fatal(err)
	}
	return append(pairs, test...), len(pairs), gold
}

// TestHansardsAER trains on Multi30k En–Fr train (lowercased, attend's tokenizer) plus the 447 English–French
// Hansards pairs (lowercased, white-space tokens) and scores lines 1–200 against their gold: each AER within
// 0.01 of fast_align's on the same input (-d -o -v, atools: forward 0.261, grow-diag-final-and 0.242,
// grow-diag-final 0.278, intersection 0.201) or better. It needs MULTI30K (the Multi30k directory) and HANSARDS
// (one with enfr.src-tgt and enfr.dev-gold), is skipped without either, and takes a minute or so of two cores.
func TestHansardsAER(t *testing.T) {
	pairs, offset, gold := hansards(t)
	links, err := AlignWords(context.Background(), pairs, DefaultOptions(), align.GrowDiagFinalAnd)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		method    align.Symmetrization
		fastAlign float64
	}{{align.Forward, 0.261}, {align.GrowDiagFinalAnd, 0.242}, {align.GrowDiagFinal, 0.278}, {align.Intersection, 0.201}} {
		var s align.Scores
		sym := links.Symmetrized(c.method)
		for k, g := range gold {
			s.Add(sym[offset+k], g)
		}
		t.Logf("%-19s precision %.4f recall %.4f AER %.4f (fast_align %.3f)", c.method, s.Precision(), s.Recall(), s.AER(), c.fastAlign)
		if s.AER() > c.fastAlign+0.01 {
			t.Errorf("%s: AER %.4f, fast_align's is %.3f", c.method, s.AER(), c.fastAlign)
		}
	}
}

// TestHansardsHMMAER is TestHansardsAER with the default model, fast_align's then five iterations of the HMM:
// grow-diag-final-and at most 0.21 (the goal of issue #53; GIZA++'s HMM and Model 4 give 0.212 there) and
// each AER within 0.005 of the measured (forward 0.2145, reverse 0.2117, grow-diag-final-and 0.2053,
// intersection 0.1805). It takes two minutes or so of two cores.
func TestHansardsHMMAER(t *testing.T) {
	pairs, offset, gold := hansards(t)
	opts, err := ModelOptions(DefaultModel)
	if err != nil {
		t.Fatal(err)
	}
	links, err := AlignWords(context.Background(), pairs, opts, align.GrowDiagFinalAnd)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		method   align.Symmetrization
		measured float64
	}{{align.Forward, 0.2145}, {align.Reverse, 0.2117}, {align.GrowDiagFinalAnd, 0.2053}, {align.Intersection, 0.1805}} {
		var s align.Scores
		sym := links.Symmetrized(c.method)
		for k, g := range gold {
			s.Add(sym[offset+k], g)
		}
		t.Logf("%-19s precision %.4f recall %.4f AER %.4f (measured %.4f)", c.method, s.Precision(), s.Recall(), s.AER(), c.measured)
		if s.AER() > c.measured+0.005 || c.method == align.GrowDiagFinalAnd && s.AER() > 0.21 {
			t.Errorf("%s: AER %.4f, measured %.4f", c.method, s.AER(), c.measured)
		}
	}
}
