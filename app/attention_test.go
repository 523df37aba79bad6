package app

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/attend-nmt/attend/align"
	"github.com/attend-nmt/attend/heatmap"
)

func TestForceTokensKeepsInputOrderAndSkipsEmptyPairs(t *testing.T) {
	m := untrainedModel(t)
	srcs := [][]string{{"a", "b", "c", "d"}, {}, {"e"}, {"a", "b"}, {"c"}}
	tgts := [][]string{{"b"}, {"a"}, {"c", "d", "e"}, {"zzz", "a"}, {}}
	together, err := ForceTokens(context.Background(), m, srcs, tgts, 2)
	if err != nil {
		t.Fatal(err)
	}
	for i := range srcs {
		alone, err := ForceTokens(context.Background(), m, srcs[i:i+1], tgts[i:i+1], 1)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(together[i], alone[0]) {
			t.Errorf("pair %d forced in a batch %+v, alone %+v", i, together[i], alone[0])
		}
		tr := together[i]
		empty := len(srcs[i]) == 0 || len(tgts[i]) == 0
		if rows := len(tr.Attention); (empty && rows != 0) || (!empty && rows != len(tgts[i])+1) {
			t.Errorf("pair %d: %d attention rows for %d target words", i, rows, len(tgts[i]))
		}
		if !reflect.DeepEqual(tr.Output, nonNil(tgts[i])) {
			t.Errorf("pair %d: output %v, want the target as given %v", i, tr.Output, tgts[i])
		}
	}
}

func TestAttentionMapAddsEOSRow(t *testing.T) {
	tr := Translation{Source: []string{"a", "b"}, Output: []string{"x"}, Attention: [][]float32{{0.25, 0.75}, {1, 0}}}
	m := AttentionMap(tr, nil, false, heatmap.Model{Checkpoint: "m.ckpt"})
	if !reflect.DeepEqual(m.Output, []string{"x", "</s>"}) || m.Validate() != nil {
		t.Errorf("map output %v, validate %v", m.Output, m.Validate())
	}
	if !reflect.DeepEqual(tr.Output, []string{"x"}) {
		t.Errorf("AttentionMap changed the translation's output to %v", tr.Output)
	}
}

// TestAlignWritesPharaohLinesThatScoreLikeTheReturnedScores aligns a small corpus with a random model (forward
// and, symmetrized, reverse), reads the written alignments back and scores them against the gold itself: the
// figures must be the ones Align returned, each target word has exactly one argmax link, and symmetrized links
// of the intersection are a subset of the forward ones.
func TestAlignWritesPharaohLinesThatScoreLikeTheReturnedScores(t *testing.T) {
	dir := t.TempDir()
	src, tgt := filepath.Join(dir, "c.src"), filepath.Join(dir, "c.tgt")
	os.WriteFile(src, []byte("a b c\nd e\n\nc c a b\n"), 0o644)
	os.WriteFile(tgt, []byte("b a\ne e d\nb\na b c d\n"), 0o644)
	gold, err := align.ReadPharaoh(strings.NewReader("0-1 1-0\n0-0 1p1 1-2\n\n0-0 1-1 2-2 3-3\n"), "gold", false)
	if err != nil {
		t.Fatal(err)
	}
	m := untrainedModel(t)
	run := func(req AlignRequest) (align.Scores, [][]align.Link) {
		var out bytes.Buffer
		req.Model, req.Src, req.Tgt, req.Output, req.Batch, req.Lowercase, req.Gold = m, src, tgt, &out, 2, true, gold
		scores, err := Align(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		links, err := align.ReadPharaoh(&out, "output", false)
		if err != nil {
			t.Fatal(err)
		}
		if len(links) != 4 {
			t.Fatalf("%d alignment lines for 4 pairs", len(links))
		}
		var again align.Scores
		for i := range links {
			again.Add(links[i], gold[i])
		}
		if again != scores {
			t.Errorf("written links score %+v, Align returned %+v", again, scores)
		}
		return scores, links
	}
	_, forward := run(AlignRequest{})
	for i, n := range []int{2, 3, 0, 4} {
		if len(forward[i]) != n {
			t.Errorf("line %d: %d argmax links for %d target words: %v", i+1, len(forward[i]), n, forward[i])
		}
	}
	_, both := run(AlignRequest{Reverse: m, Sym: align.Intersection})
	for i := range both {
		for _, l := range both[i] {
			if !strings.Contains(" "+align.FormatPharaoh(forward[i], false)+" ", " "+align.FormatPharaoh([]align.Link{l}, false)+" ") {
				t.Errorf("line %d: intersection link %v not among the forward links %v", i+1, l, forward[i])
			}
		}
	}
	var out bytes.Buffer
	if _, err := Align(context.Background(), AlignRequest{Model: m, Src: src, Tgt: tgt, Output: &out, Batch: 2, Gold: gold[:3]}); err == nil || !strings.Contains(err.Error(), "3 lines") {
		t.Errorf("short gold: error %v", err)
	}
}
