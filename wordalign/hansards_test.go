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

// bound is the most AER a test allows a symmetrization, and the figure it is measured against.
type bound struct {
	method        align.Symmetrization
	most, against float64
}

// checkHansards aligns the corpus of hansards with opts and checks each bound on lines 1–200, logging the scores
// beside what they are measured against (named by against).
func checkHansards(t *testing.T, opts Options, against string, bounds []bound) {
	pairs, offset, gold := hansards(t)
	links, err := AlignWords(context.Background(), pairs, opts, align.GrowDiagFinalAnd)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range bounds {
		var s align.Scores
		sym := links.Symmetrized(b.method)
		for k, g := range gold {
			s.Add(sym[offset+k], g)
		}
		t.Logf("%-19s precision %.4f recall %.4f AER %.4f (%s %.4f)", b.method, s.Precision(), s.Recall(), s.AER(), against, b.against)
		if s.AER() > b.most {
			t.Errorf("%s: AER %.4f, want at most %.4f (%s %.4f)", b.method, s.AER(), b.most, against, b.against)
		}
	}
}

// TestHansardsAER trains on Multi30k En–Fr train (lowercased, attend's tokenizer) plus the 447 English–French
// Hansards pairs (lowercased, white-space tokens) and scores lines 1–200 against their gold: each AER of
// fast_align's model within 0.01 of fast_align's on the same input (-d -o -v, atools: forward 0.261,
// grow-diag-final-and 0.242, grow-diag-final 0.278, intersection 0.201) or better. It needs MULTI30K (the
// Multi30k directory) and HANSARDS (one with enfr.src-tgt and enfr.dev-gold), is skipped without either, and
// takes a minute or so of two cores.
func TestHansardsAER(t *testing.T) {
	checkHansards(t, DefaultOptions(), "fast_align", []bound{{align.Forward, 0.271, 0.261},
		{align.GrowDiagFinalAnd, 0.252, 0.242}, {align.GrowDiagFinal, 0.288, 0.278}, {align.Intersection, 0.211, 0.201}})
}

// TestHansardsHMMAER is TestHansardsAER with the default model, fast_align's then five iterations of the HMM:
// grow-diag-final-and at most 0.21 (the goal of issue #53; GIZA++'s HMM and Model 4 give 0.212 there) and
// each AER within 0.005 of the measured (forward 0.2145, reverse 0.2117, grow-diag-final-and 0.2053,
// intersection 0.1805). It takes two minutes or so of two cores.
func TestHansardsHMMAER(t *testing.T) {
	opts, err := ModelOptions(DefaultModel)
	if err != nil {
		t.Fatal(err)
	}
	checkHansards(t, opts, "measured", []bound{{align.Forward, 0.2195, 0.2145}, {align.Reverse, 0.2167, 0.2117},
		{align.GrowDiagFinalAnd, 0.21, 0.2053}, {align.Intersection, 0.1855, 0.1805}})
}
