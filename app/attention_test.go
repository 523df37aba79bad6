package app

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/attend-nmt/attend/align"
	"github.com/attend-nmt/attend/data"
	"github.com/attend-nmt/attend/heatmap"
	"github.com/attend-nmt/attend/model"
)

// ForceTokens is forceWords on the model's own tokens, telling no progress.
func ForceTokens(ctx context.Context, m *model.Seq2Seq[float32], srcs, tgts [][]string, batch int) ([]Translation, error) {
	return forceWords(ctx, m, nil, srcs, tgts, batch, nil, false)
}

// ForceWords is forceWords on words given pre-tokenized, telling no progress.
func ForceWords(ctx context.Context, m *model.Seq2Seq[float32], tok data.Tokenizer, srcs, tgts [][]string, batch int) ([]Translation, error) {
	return forceWords(ctx, m, tok, srcs, tgts, batch, nil, false)
}

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
		req.Model, req.Corpus, req.Output, req.Batch, req.Lowercase, req.Gold = m, Corpus{Src: src, Tgt: tgt}, &out, 2, true, gold
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
	if _, err := Align(context.Background(), AlignRequest{Model: m, Corpus: Corpus{Src: src, Tgt: tgt}, Output: &out, Batch: 2,
		Gold: append(gold, nil)}); err == nil || !strings.Contains(err.Error(), "5 lines") {
		t.Errorf("long gold: error %v", err)
	}
	scores, err := Align(context.Background(), AlignRequest{Model: m, Corpus: Corpus{Src: src, Tgt: tgt}, Output: &out, Batch: 2, Gold: gold[:2]})
	if err != nil || scores.Sentences != 2 {
		t.Errorf("gold of the first 2 lines: %+v, %v", scores, err)
	}
}

// tokenizedModels are a word-level and a subword model whose vocabularies know the tokens of "Mr. Smith".
func tokenizedModels(t *testing.T) map[string]*model.Seq2Seq[float32] {
	t.Helper()
	words := [][]string{strings.Fields("mr . smith left the house m est parti de la maison")}
	out := map[string]*model.Seq2Seq[float32]{}
	for _, name := range []string{"words", "subwords"} {
		src, tgt := data.BuildVocab(words, 1, 0), data.BuildVocab(words, 1, 0)
		var bpe *data.BPE
		if name == "subwords" {
			bpe = data.LearnBPE(words, 6)
			pieces := bpe.ApplyAll(words)
			src, tgt = data.BuildVocab(pieces, 1, 0), data.BuildVocab(pieces, 1, 0)
		}
		m, err := model.New[float32](tinyTrainConfig().Model, src, tgt)
		if err != nil {
			t.Fatal(err)
		}
		m.Init(rand.New(rand.NewPCG(3, 4)))
		m.Subwords = bpe
		out[name] = m
	}
	return out
}

// With Tokenized, links count the white-space tokens of the text: "Mr." is one word, although the model reads
// "mr" and ".". Since the model's tokens of a line are those of its white-space tokens one after the other, the
// links must be the model-token links of the untokenized run, each brought to the white-space token it lies in.
func TestTokenizedAlignKeepsTheGivenWords(t *testing.T) {
	dir := t.TempDir()
	src, tgt := filepath.Join(dir, "c.en"), filepath.Join(dir, "c.fr")
	os.WriteFile(src, []byte("Mr. Smith left the house .\nthe house .\n"), 0o644)
	os.WriteFile(tgt, []byte("M. Smith est parti de la maison .\nla maison .\n"), 0o644)
	// The white-space token of each of the model's tokens of the lines.
	srcWord := [][]int{{0, 0, 1, 2, 3, 4, 5}, {0, 1, 2}}
	tgtWord := [][]int{{0, 0, 1, 2, 3, 4, 5, 6, 7}, {0, 1, 2}}
	for name, m := range tokenizedModels(t) {
		t.Run(name, func(t *testing.T) {
			run := func(tokenized bool) [][]align.Link {
				var out bytes.Buffer
				if _, err := Align(context.Background(), AlignRequest{Model: m, Reverse: m, Sym: align.Union, Lowercase: true,
					Corpus: Corpus{Src: src, Tgt: tgt}, Tokenized: tokenized, Output: &out, Batch: 2}); err != nil {
					t.Fatal(err)
				}
				links, err := align.ReadPharaoh(&out, "links", false)
				if err != nil {
					t.Fatal(err)
				}
				return links
			}
			tokens, words := run(false), run(true)
			for k := range tokens {
				var want []align.Link
				for _, l := range tokens[k] {
					want = append(want, align.Link{Src: srcWord[k][l.Src], Tgt: tgtWord[k][l.Tgt]})
				}
				want = slices.Compact(align.Sort(want))
				if !slices.Equal(words[k], want) {
					t.Errorf("line %d: tokenized links %v, want the token links %v brought to words: %v", k+1, words[k], tokens[k], want)
				}
				if k == 0 && !slices.ContainsFunc(words[k], func(l align.Link) bool { return l.Src == 5 }) {
					t.Errorf("line 1: no link from the sixth word \".\": %v", words[k])
				}
			}
		})
	}
}

// ForceWords gives the attention of the given words: "Mr."'s column sums those of "mr" and ".", "M."'s row
// averages theirs.
func TestForceWordsSumsAndAveragesPieces(t *testing.T) {
	m := tokenizedModels(t)["words"]
	tok := data.NewRegexTokenizer(true)
	given := [][]string{strings.Fields("Mr. Smith left")}
	ref := [][]string{strings.Fields("M. Smith est parti")}
	words, err := ForceWords(context.Background(), m, tok, given, ref, 1)
	if err != nil {
		t.Fatal(err)
	}
	tokens, err := ForceTokens(context.Background(), m, [][]string{strings.Fields("mr . smith left")}, [][]string{strings.Fields("m . smith est parti")}, 1)
	if err != nil {
		t.Fatal(err)
	}
	w, p := words[0], tokens[0].Attention
	if !slices.Equal(w.Source, given[0]) || !slices.Equal(w.Output, ref[0]) || len(w.Attention) != 5 {
		t.Fatalf("forced %q → %q with %d rows", w.Source, w.Output, len(w.Attention))
	}
	col := func(row []float32) []float32 { return []float32{row[0] + row[1], row[2], row[3]} }
	want := [][]float32{col(p[0]), col(p[0]), col(p[3]), col(p[4]), col(p[5])}
	for i := range want[0] {
		want[0][i] = (col(p[0])[i] + col(p[1])[i]) / 2
	}
	want[1] = col(p[2])
	for r := range want {
		for i := range want[r] {
			if math.Abs(float64(w.Attention[r][i]-want[r][i])) > 1e-6 {
				t.Fatalf("row %d: %v, want %v", r, w.Attention[r], want[r])
			}
		}
	}
}

// TestAlignReadsTheFullContextAlignment aligns with a model that has full-context alignment
// (model.full_context_alignment, its weight drawn at random): Align links by the alignment attention of the
// teacher-forced target — the argmax of model.Forced.Alignment — unless DecoderAttention, which links by the
// decoder's attention; translate with DecodeOptions.Alignment gives its own output's alignment attention.
func TestAlignReadsTheFullContextAlignment(t *testing.T) {
	dir := t.TempDir()
	src, tgt := filepath.Join(dir, "c.src"), filepath.Join(dir, "c.tgt")
	srcs := [][]string{strings.Fields("a b c"), strings.Fields("d e"), strings.Fields("c c a b e d")}
	tgts := [][]string{strings.Fields("b a"), strings.Fields("e e d"), strings.Fields("a b c d e a")}
	join := func(s [][]string) []byte {
		var lines []string
		for _, w := range s {
			lines = append(lines, strings.Join(w, " "))
		}
		return []byte(strings.Join(lines, "\n") + "\n")
	}
	os.WriteFile(src, join(srcs), 0o644)
	os.WriteFile(tgt, join(tgts), 0o644)
	cfg := tinyTrainConfig().Model
	cfg.FullContextAlignment = true
	words := [][]string{strings.Fields("a b c d e")}
	m, err := model.New[float32](cfg, data.BuildVocab(words, 1, 0), data.BuildVocab(words, 1, 0))
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 0))
	m.Init(rng)
	for i := range m.Decoder.AlignW.Data {
		m.Decoder.AlignW.Data[i] = float32(4*rng.Float64() - 2)
	}
	links := func(decoderAttention bool) [][]align.Link {
		var out bytes.Buffer
		if _, err := Align(context.Background(), AlignRequest{Model: m, Corpus: Corpus{Src: src, Tgt: tgt}, Output: &out, Batch: 2,
			DecoderAttention: decoderAttention}); err != nil {
			t.Fatal(err)
		}
		l, err := align.ReadPharaoh(&out, "output", false)
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	argmax := func(rows func(f model.Forced) [][]float32) [][]align.Link {
		var out [][]align.Link
		for i := range srcs {
			b := data.MakeBatches([]data.Example{{Src: m.SrcVocab.Encode(srcs[i]), Tgt: m.TgtVocab.Encode(tgts[i])}}, data.BatchOptions{BatchSize: 1}, nil)[0]
			out = append(out, align.Hard(rows(m.Force(&b)[0]), len(srcs[i]), len(tgts[i]), 0))
		}
		return out
	}
	full, decoder := links(false), links(true)
	if want := argmax(func(f model.Forced) [][]float32 { return f.Alignment }); !reflect.DeepEqual(full, want) {
		t.Errorf("links %v, want the alignment attention's argmax %v", full, want)
	}
	if want := argmax(func(f model.Forced) [][]float32 { return f.Attention }); !reflect.DeepEqual(decoder, want) {
		t.Errorf("DecoderAttention: links %v, want the decoder attention's argmax %v", decoder, want)
	}
	if reflect.DeepEqual(full, decoder) {
		t.Errorf("the alignment attention links as the decoder's attention does: %v", full)
	}
	// Translation: the output's own alignment attention, which forcing the output again gives. (An untrained
	// model would end at once: </s> is made unlikely, so the outputs run to MaxLen.)
	m.Decoder.OutB.Data[data.EOSID] = -100
	opts := DecodeOptions{MaxLen: 8, Batch: 2, Alignment: true}
	trs, err := TranslateTokens(context.Background(), m, srcs, opts)
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for i, tr := range trs {
		if len(tr.Output) == 0 { // (forcing an empty target gives no rows)
			continue
		}
		checked++
		forced, err := forceWords(context.Background(), m, nil, srcs[i:i+1], [][]string{tr.Output}, 1, nil, true)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(tr.Attention, forced[0].Attention[:len(tr.Attention)]) {
			t.Errorf("sentence %d: translate's attention with Alignment %v, the forced output's alignment %v", i, tr.Attention, forced[0].Attention)
		}
	}
	if checked == 0 {
		t.Errorf("every translation is empty: nothing to compare")
	}
}

// TestHeatmapAlignmentNeedsAnAlignmentAttention is issue #51's case 11: heatmap --alignment on a model without
// an alignment attention (model.full_context_alignment off) is refused, naming the model and the key, rather
// than drawing the decoder's attention as if it were the alignment attention; a model with one draws it.
func TestHeatmapAlignmentNeedsAnAlignmentAttention(t *testing.T) {
	dir := t.TempDir()
	train, _ := writeCorpus(t, dir, 7)
	ctx := context.Background()
	for _, full := range []bool{false, true} {
		cfg := tinyTrainConfig()
		cfg.Train.MaxSteps, cfg.Model.FullContextAlignment = 2, full
		if full {
			cfg.Train.GuidedAlignment = model.GuideAuto // full_context_alignment needs it
		}
		ckpt := filepath.Join(dir, fmt.Sprintf("full-%v.ckpt", full))
		if _, err := Train(ctx, TrainRequest{Config: cfg, Train: train, Out: ckpt, Stdout: &bytes.Buffer{}}); err != nil {
			t.Fatal(err)
		}
		out := filepath.Join(dir, fmt.Sprintf("full-%v.json", full))
		err := RunHeatmap(ctx, HeatmapOptions{Streams: Streams{Stdout: &bytes.Buffer{}, Stderr: &bytes.Buffer{}}, Models: []string{ckpt},
			Text: "the cat sees the dog", Out: out, Alignment: true, Search: SearchFlags{Beam: 1}})
		switch {
		case full && err != nil:
			t.Errorf("a model with an alignment attention: %v", err)
		case !full && (err == nil || !strings.Contains(err.Error(), "--alignment: "+ckpt+" has no alignment attention") ||
			!strings.Contains(err.Error(), "model.full_context_alignment")):
			t.Errorf("a model without an alignment attention: %v, want a refusal naming it", err)
		}
		if _, serr := os.Stat(out); (serr == nil) != full {
			t.Errorf("full_context_alignment %v: %s written: %v", full, out, serr == nil)
		}
	}
}
