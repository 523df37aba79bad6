package app

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/attend-nmt/attend/align"
	"github.com/attend-nmt/attend/data"
	"github.com/attend-nmt/attend/decoder"
	"github.com/attend-nmt/attend/model"
)

// TestWordAttentionSumsSourceAndAveragesOutputSubwords checks WordAttention against hand-computed values:
// source "ab@@ c d" (words "abc", "d"), output "x@@ y z" (words "xy", "z") and a row for </s>.
func TestWordAttentionSumsSourceAndAveragesOutputSubwords(t *testing.T) {
	attn := [][]float32{
		{0.5, 0.3, 0.2}, // x@@
		{0.1, 0.1, 0.8}, // y
		{0.2, 0.2, 0.6}, // z
		{0.6, 0.2, 0.2}, // </s>
	}
	got := WordAttention(attn, []int{0, 0, 1}, 2, []int{0, 0, 1}, 2)
	want := [][]float32{
		{(0.8 + 0.2) / 2, (0.2 + 0.8) / 2}, // xy: the mean of x@@ and y, each summed over ab@@ c
		{0.4, 0.6},                         // z
		{0.8, 0.2},                         // </s>
	}
	if len(got) != len(want) {
		t.Fatalf("%d rows, want %d", len(got), len(want))
	}
	for r := range want {
		for i := range want[r] {
			if math.Abs(float64(got[r][i]-want[r][i])) > 1e-6 {
				t.Fatalf("row %d: %v, want %v", r, got[r], want[r])
			}
		}
	}
}

// TestSubwordLinksBecomeWordLinks: subword links are argmax per output subword, brought to words and merged
// as OpenNMT-py's to_word_align does.
func TestSubwordLinksBecomeWordLinks(t *testing.T) {
	attn := [][]float32{{0.5, 0.3, 0.2}, {0.1, 0.8, 0.1}, {0.3, 0.1, 0.6}, {1, 0, 0}}
	tr := toWords(Translation{Source: strings.Fields("ab@@ c d"), Output: strings.Fields("x@@ y z"), Attention: attn,
		Heads: [][][]float32{attn, attn}}, strings.Fields("abc d"), []int{0, 0, 1})
	if !slices.Equal(tr.Output, strings.Fields("xy z")) || !slices.Equal(tr.Source, strings.Fields("abc d")) {
		t.Fatalf("words %q → %q", tr.Source, tr.Output)
	}
	if len(tr.Heads) != 2 || fmt.Sprint(tr.Heads[1]) != fmt.Sprint(tr.Attention) || len(tr.Subwords.Heads) != 2 {
		t.Fatalf("heads %v not brought to words like the attention %v", tr.Heads, tr.Attention)
	}
	// x@@→ab@@ and y→c both link xy to abc, once; z→d.
	if got, want := align.FormatPharaoh(tr.Links(0), false), "0-0 1-1"; got != want {
		t.Fatalf("links %q, want %q", got, want)
	}
	// With a threshold of 0.25, x@@ also links to c (still abc, no new link) and z to ab@@ (abc: a new one).
	if got, want := align.FormatPharaoh(tr.Links(0.25), false), "0-0 0-1 1-1"; got != want {
		t.Fatalf("links at 0.25 %q, want %q", got, want)
	}
}

// TestReplaceUnkCopiesSourceSubwordsWithTheirMarkers: a name split into subwords the target vocabulary lacks
// comes out whole when each <unk> copies the source subword it attended to, marker and all.
func TestReplaceUnkCopiesSourceSubwordsWithTheirMarkers(t *testing.T) {
	vocab := data.BuildVocab([][]string{{"ein", "mann"}}, 1, 0)
	sourcePieces := strings.Fields("ein schwarz@@ en@@ egger")
	h := decoder.Hypothesis{Tokens: []int{vocab.ID("ein"), data.UnkID, data.UnkID, data.UnkID},
		Attention: [][]float32{{1, 0, 0, 0}, {0, 0.9, 0.1, 0}, {0, 0.1, 0.8, 0.1}, {0, 0, 0.2, 0.8}}}
	pieces := outputTokens(vocab, h, sourcePieces, true)
	tr := toWords(Translation{Source: sourcePieces, Output: pieces, Attention: h.Attention}, strings.Fields("ein schwarzenegger"), []int{0, 1, 1, 1})
	if want := strings.Fields("ein schwarzenegger"); !slices.Equal(tr.Output, want) {
		t.Fatalf("output %q (subwords %q), want %q", tr.Output, pieces, want)
	}
}

// TestTrainWithSubwordsTranslatesToWords trains a toy model with data.subword bpe and few merges (so most
// words are split), then checks that the checkpoint holds the merges, that a resumed run keeps them, and that
// translate, align, heatmaps and eval work in words: no "@@" in any output, attention matrices and links
// indexed by the words of the untokenized sentences, and the subwords kept beside them.
func TestTrainWithSubwordsTranslatesToWords(t *testing.T) {
	dir := t.TempDir()
	train, valid := writeCorpus(t, dir, 5)
	cfg := tinyTrainConfig()
	cfg.Data.Subword, cfg.Data.Merges = model.SubwordBPE, 25
	cfg.Train.MaxSteps = 30
	cfg.Train.ValidBLEU = 10 // validation BLEU joins the subwords (model.ValidBLEU)
	out := filepath.Join(dir, "m.ckpt")
	var log bytes.Buffer
	if _, err := Train(context.Background(), TrainRequest{Config: cfg, Train: train, Valid: valid, Out: out, Stdout: &log}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(log.String(), "subwords: learned 25 BPE merges (data.merges 25) from both sides") {
		t.Fatalf("training log does not report the merges:\n%s", log.String())
	}
	ck, err := model.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	m := ck.Model
	if m.Subwords == nil || len(m.Subwords.Merges) != 25 {
		t.Fatalf("checkpoint subwords %v, want 25 merges", m.Subwords)
	}
	marked := 0
	for _, tok := range m.SrcVocab.Tokens() {
		if strings.HasSuffix(tok, data.BPEMarker) {
			marked++
		}
	}
	if marked == 0 {
		t.Fatal("the source vocabulary has no subword ending in @@: training did not split words")
	}

	// Resuming splits the corpus with the stored merges: the vocabulary still covers it.
	log.Reset()
	more := func(c *model.Config) error { c.Train.MaxSteps = 35; return nil }
	if _, err := Train(context.Background(), TrainRequest{Config: cfg, Overrides: more, Train: train, Out: out, Resume: out, Stdout: &log}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(log.String(), "learned") || strings.Contains(log.String(), "unknown") {
		t.Fatalf("a resumed run learned merges again or found unknown words:\n%s", log.String())
	}
	if ck, err = model.Load(out); err != nil || !slices.Equal(ck.Model.Subwords.Merges, m.Subwords.Merges) {
		t.Fatalf("merges changed on resume (%v)", err)
	}

	srcLines := readLinesOf(t, filepath.Join(dir, "valid.src"))
	tgtLines := readLinesOf(t, filepath.Join(dir, "valid.tgt"))
	words := func(line string) []string { return data.NewRegexTokenizer(true).Tokenize(line) }
	var text, tokenized, attnJSON, links bytes.Buffer
	for _, tok := range []bool{false, true} {
		dst := &text
		req := TranslateRequest{TextOptions: TextOptions{Lowercase: true, Decode: DecodeOptions{MaxLen: 20, Batch: 8, Beam: 2, ReplaceUnk: true}, Tokenized: tok},
			Model: m, Input: strings.NewReader(strings.Join(srcLines, "\n") + "\n"), InputName: "valid.src"}
		if tok {
			dst, req.Attention, req.Alignments = &tokenized, &attnJSON, &links
		}
		req.Output = dst
		if _, err := Translate(context.Background(), req); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(dst.String(), "@@") {
			t.Fatalf("translations (tokenized %v) hold subwords:\n%s", tok, dst.String())
		}
	}
	outLines := strings.Split(strings.TrimSuffix(tokenized.String(), "\n"), "\n")
	linkLines := strings.Split(strings.TrimSuffix(links.String(), "\n"), "\n")
	dec := json.NewDecoder(&attnJSON)
	joined := 0
	for i, line := range srcLines {
		var tr Translation
		if err := dec.Decode(&tr); err != nil {
			t.Fatalf("attention line %d: %v", i+1, err)
		}
		src, hyp := words(line), strings.Fields(outLines[i])
		if !slices.Equal(tr.Source, src) || !slices.Equal(tr.Output, hyp) {
			t.Fatalf("line %d: attention export has %q → %q, the input and output are %q → %q", i+1, tr.Source, tr.Output, src, hyp)
		}
		if tr.Subwords == nil || !slices.Equal(data.UndoBPE(tr.Subwords.Output), hyp) || !slices.Equal(data.UndoBPE(tr.Subwords.Source), src) {
			t.Fatalf("line %d: subwords %+v do not join to the words", i+1, tr.Subwords)
		}
		if len(tr.Subwords.Output) > len(hyp) {
			joined++
		}
		checkWordMatrix(t, i+1, tr.Attention, len(src), len(hyp))
		sentLinks, err := align.ReadPharaoh(strings.NewReader(linkLines[i]+"\n"), "links", false)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range sentLinks[0] {
			if l.Src >= len(src) || l.Tgt >= len(hyp) {
				t.Fatalf("line %d: link %d-%d outside %d source and %d output words", i+1, l.Src, l.Tgt, len(src), len(hyp))
			}
		}
	}
	t.Logf("%d of %d translations joined subwords into words", joined, len(srcLines))

	// Alignment of the references, scored against the generator's word-level gold.
	goldFile, err := os.Open(filepath.Join(dir, "valid.align"))
	if err != nil {
		t.Fatal(err)
	}
	gold, err := align.ReadPharaoh(goldFile, "valid.align", false)
	goldFile.Close()
	if err != nil {
		t.Fatal(err)
	}
	var alignOut bytes.Buffer
	scores, err := Align(context.Background(), AlignRequest{Model: m, Lowercase: true,
		Corpus: Corpus{Src: filepath.Join(dir, "valid.src"), Tgt: filepath.Join(dir, "valid.tgt")}, Output: &alignOut, Gold: gold, Batch: 8})
	if err != nil {
		t.Fatal(err)
	}
	written, err := align.ReadPharaoh(&alignOut, "align", false)
	if err != nil {
		t.Fatal(err)
	}
	for i := range written {
		src, tgt := words(srcLines[i]), words(tgtLines[i])
		covered := map[int]bool{}
		for _, l := range written[i] {
			if l.Src >= len(src) || l.Tgt >= len(tgt) {
				t.Fatalf("pair %d: link %d-%d outside %d source and %d target words", i+1, l.Src, l.Tgt, len(src), len(tgt))
			}
			covered[l.Tgt] = true
		}
		if len(covered) != len(tgt) {
			t.Fatalf("pair %d: %d of %d target words linked; every word has subwords with an argmax", i+1, len(covered), len(tgt))
		}
	}
	if aer := scores.AER(); !(aer >= 0 && aer <= 1) {
		t.Fatalf("AER %v", aer)
	}
	forced, err := ForceTokens(context.Background(), m, [][]string{words(srcLines[0])}, [][]string{words(tgtLines[0])}, 8)
	if err != nil {
		t.Fatal(err)
	}
	f := forced[0]
	checkWordMatrix(t, 1, f.Attention, len(f.Source), len(f.Output))
	if len(f.LogProbs) != len(f.Output)+1 || len(f.Subwords.Output) <= len(f.Output) {
		t.Fatalf("forced reference: %d log-probabilities for %d words (%d subwords)", len(f.LogProbs), len(f.Output), len(f.Subwords.Output))
	}

	// eval translates to words and scores the perplexity of the references' subwords.
	var hyps bytes.Buffer
	res, err := Eval(context.Background(), EvalRequest{Model: m, Lowercase: true,
		Src:    NamedReader{R: strings.NewReader(strings.Join(srcLines, "\n") + "\n"), Name: "valid.src"},
		Refs:   []NamedReader{{R: strings.NewReader(strings.Join(tgtLines, "\n") + "\n"), Name: "valid.tgt"}},
		Decode: DecodeOptions{MaxLen: 20, Batch: 8}, Perplexity: true, Output: &hyps})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(hyps.String(), "@@") || !(res.Perplexity > 1) || res.PerplexityTokens <= len(strings.Fields(strings.Join(tgtLines, " "))) {
		t.Fatalf("eval: perplexity %v over %d tokens, translations:\n%s", res.Perplexity, res.PerplexityTokens, hyps.String())
	}
}

// checkWordMatrix fails unless attn has a row per output word (and maybe one for </s>) of one weight per source
// word, each row summing to 1.
func checkWordMatrix(t *testing.T, line int, attn [][]float32, srcWords, outWords int) {
	t.Helper()
	if len(attn) != outWords && len(attn) != outWords+1 {
		t.Fatalf("line %d: %d attention rows for %d output words", line, len(attn), outWords)
	}
	for r, row := range attn {
		sum := 0.0
		for _, w := range row {
			sum += float64(w)
		}
		if len(row) != srcWords || math.Abs(sum-1) > 1e-4 {
			t.Fatalf("line %d row %d: %d weights summing to %v for %d source words", line, r, len(row), sum, srcWords)
		}
	}
}

// readLinesOf returns the lines of a text file.
func readLinesOf(t *testing.T, path string) []string {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(string(raw), "\n"), "\n")
}

// TestModelOfWordsKeepsSubwordMarkersOfItsInput: a model trained without merges of its own on text split
// beforehand reads "@@" as part of its subwords, not as two "@" words.
func TestModelOfWordsKeepsSubwordMarkersOfItsInput(t *testing.T) {
	pieces := [][]string{strings.Fields("a@@ b c@@ d e")}
	m, err := model.New[float32](tinyTrainConfig().Model, data.BuildVocab(pieces, 1, 0), data.BuildVocab(pieces, 1, 0))
	if err != nil {
		t.Fatal(err)
	}
	var out, attn bytes.Buffer
	if _, err := Translate(context.Background(), TranslateRequest{TextOptions: TextOptions{Lowercase: true, Decode: DecodeOptions{MaxLen: 3, Batch: 4}},
		Model: m, Input: strings.NewReader("A@@ b e\n"), InputName: "stdin", Output: &out, Attention: &attn}); err != nil {
		t.Fatal(err)
	}
	var tr Translation
	if err := json.Unmarshal(attn.Bytes(), &tr); err != nil {
		t.Fatal(err)
	}
	if want := strings.Fields("a@@ b e"); tr.Subwords == nil || !slices.Equal(tr.Subwords.Source, want) || !slices.Equal(tr.Source, strings.Fields("A@@ b e")) {
		t.Fatalf("source words %q (the model's tokens %+v), want the given words and the tokens %q", tr.Source, tr.Subwords, want)
	}
}
