package app

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/attend-nmt/attend/align"
	"github.com/attend-nmt/attend/data"
	"github.com/attend-nmt/attend/model"
)

// punctPairs makes n pairs of a toy English→French corpus whose white-space words attend's tokenizer splits:
// titles ("Mr."), contractions ("don't"), elisions ("l'homme"), possessives and end punctuation glued on.
func punctPairs(n int, seed uint64) (src, tgt []string) {
	rng := rand.New(rand.NewPCG(seed, 0))
	subject := [][2]string{{"Mr. Smith", "M. Smith"}, {"Mrs. Brown", "Mme Brown"}, {"the man", "l'homme"},
		{"the dog", "le chien"}, {"l'homme", "l'homme"}, {"the children", "les enfants"}}
	verb := [][2]string{{"sees", "voit"}, {"doesn't see", "ne voit pas"}, {"likes", "aime"},
		{"don't like", "n'aime pas"}, {"reads", "lit"}, {"isn't reading", "ne lit pas"}}
	object := [][2]string{{"the cat", "le chat"}, {"l'homme", "l'homme"}, {"Mr. Smith's book", "le livre de M. Smith"},
		{"a (red) ball", "une balle (rouge)"}, {"the house", "la maison"}, {"it", "le"}}
	end := []string{".", "!", "?", ", today.", "..."}
	for range n {
		s, v, o, e := subject[rng.IntN(len(subject))], verb[rng.IntN(len(verb))], object[rng.IntN(len(object))], end[rng.IntN(len(end))]
		fr := e
		if e == ", today." {
			fr = ", aujourd'hui."
		}
		src = append(src, s[0]+" "+v[0]+" "+o[0]+e)
		tgt = append(tgt, s[1]+" "+v[1]+" "+o[1]+" "+fr)
	}
	return src, tgt
}

// punctModels returns a model of words and one of subwords (BPE, few merges) trained on punctPairs: 200 steps
// at width 16, about a second each, enough for outputs of several words with punctuation. They are trained once
// for all the tests that translate with them (none changes them; training the same way again gives the same
// weights).
func punctModels(t *testing.T) map[string]*model.Seq2Seq[float32] {
	t.Helper()
	models, err := trainedPunctModels()
	if err != nil {
		t.Fatal(err)
	}
	return models
}

// trainedPunctModels trains punctModels' models on the first call and returns them (or its error) on every call.
var trainedPunctModels = sync.OnceValues(func() (map[string]*model.Seq2Seq[float32], error) {
	dir, err := os.MkdirTemp("", "attend-punct")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	src, tgt := punctPairs(200, 1)
	corpus := Corpus{Src: filepath.Join(dir, "train.en"), Tgt: filepath.Join(dir, "train.fr")}
	for path, lines := range map[string][]string{corpus.Src: src, corpus.Tgt: tgt} {
		if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
			return nil, err
		}
	}
	models := map[string]*model.Seq2Seq[float32]{}
	for _, name := range []string{"words", "subwords"} {
		cfg := tinyTrainConfig()
		cfg.Train.MaxSteps = 200
		cfg.Model.Emb, cfg.Model.EncHidden, cfg.Model.DecHidden, cfg.Model.AttnDim = 16, 16, 16, 16
		cfg.Train.LR = 1e-2
		if name == "subwords" {
			cfg.Data.Subword, cfg.Data.Merges = model.SubwordBPE, 30
		}
		out := filepath.Join(dir, name+".ckpt")
		if _, err := Train(context.Background(), TrainRequest{Config: cfg, Train: corpus, Out: out, Stdout: &bytes.Buffer{}}); err != nil {
			return nil, fmt.Errorf("training the %s model: %w", name, err)
		}
		ck, err := model.Load(out)
		if err != nil {
			return nil, err
		}
		models[name] = ck.Model
	}
	return models, nil
})

// translated is what Translate wrote for some lines: the output lines, the alignment lines read back, and the
// attention records, both decoded and raw.
type translated struct {
	text    []string
	links   [][]align.Link
	records []Translation
	raw     []map[string]json.RawMessage
}

func translateAll(t *testing.T, m *model.Seq2Seq[float32], lines []string, req TranslateRequest) translated {
	t.Helper()
	var out, attn, links bytes.Buffer
	req.Model, req.Lowercase, req.Input, req.InputName = m, true, strings.NewReader(strings.Join(lines, "\n")+"\n"), "in"
	req.Output, req.Attention, req.Alignments = &out, &attn, &links
	if _, err := Translate(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	var res translated
	res.text = strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	var err error
	if res.links, err = align.ReadPharaoh(&links, "alignments", false); err != nil {
		t.Fatal(err)
	}
	for _, rec := range strings.Split(strings.TrimSpace(attn.String()), "\n") {
		var tr Translation
		var raw map[string]json.RawMessage
		if err := json.Unmarshal([]byte(rec), &tr); err != nil {
			t.Fatal(err)
		}
		json.Unmarshal([]byte(rec), &raw)
		res.records, res.raw = append(res.records, tr), append(res.raw, raw)
	}
	if len(res.text) != len(lines) || len(res.links) != len(lines) || len(res.records) != len(lines) {
		t.Fatalf("%d lines in, %d translations, %d alignment lines, %d attention records", len(lines), len(res.text), len(res.links), len(res.records))
	}
	return res
}

// tokensOfWords splits white-space words with the model's tokenizer and says which word each token is of.
func tokensOfWords(words []string) (tokens []string, wordOf []int) {
	tok := data.NewRegexTokenizer(true)
	for w, word := range words {
		for _, t := range tok.Tokenize(word) {
			tokens, wordOf = append(tokens, t), append(wordOf, w)
		}
	}
	return tokens, wordOf
}

// TestTranslateLinksTheWordsOfTheText: translate's alignments and attention speak of the white-space words of
// the input line and of the written output, for a model of words and one of subwords. The translations are
// those of --token-level, and its token links, each token brought to the word it lies in (its white-space word
// on the input side, the word the detokenizer glued it into on the output side), are the word links; for the
// model of words, a word's column is the sum of its tokens' and its row the mean of theirs.
func TestTranslateLinksTheWordsOfTheText(t *testing.T) {
	lines := []string{"Mr. Smith doesn't see l'homme.", "Mrs. Brown don't like Mr. Smith's book!", "l'homme isn't reading a (red) ball ...",
		"the dog likes the cat, today.", "Mr. Smith reads it?", "the man sees the house . Mr. Brown"}
	for name, m := range punctModels(t) {
		t.Run(name, func(t *testing.T) {
			for _, beam := range []int{1, 3} {
				decode := DecodeOptions{MaxLen: 20, Batch: 4, Beam: beam}
				words := translateAll(t, m, lines, TranslateRequest{TextOptions: TextOptions{Decode: decode}})
				tokens := translateAll(t, m, lines, TranslateRequest{TextOptions: TextOptions{Decode: decode, TokenLevel: true}})
				glued := 0
				for k, line := range lines {
					src, out := strings.Fields(line), strings.Fields(words.text[k])
					if words.text[k] != tokens.text[k] {
						t.Fatalf("beam %d line %d: %q at the word level, %q at the token level", beam, k+1, words.text[k], tokens.text[k])
					}
					tr := words.records[k]
					if !slices.Equal(tr.Source, src) || !slices.Equal(tr.Output, out) {
						t.Fatalf("beam %d line %d: attention of %q → %q, the lines are %q → %q", beam, k+1, tr.Source, tr.Output, src, out)
					}
					checkWordMatrix(t, k+1, tr.Attention, len(src), len(out))
					srcTokens, srcWord := tokensOfWords(src)
					tok := tokens.records[k]
					if !slices.Equal(tok.Source, srcTokens) {
						t.Fatalf("line %d: token-level source %q, want %q", k+1, tok.Source, srcTokens)
					}
					outWords, outWord := data.DetokenizeWords(tok.Output)
					if !slices.Equal(outWords, out) {
						t.Fatalf("line %d: token-level output %q detokenizes to %q, not %q", k+1, tok.Output, outWords, out)
					}
					if len(outWords) < len(tok.Output) {
						glued++
					}
					var want []align.Link
					for _, l := range tokens.links[k] {
						want = append(want, align.Link{Src: srcWord[l.Src], Tgt: outWord[l.Tgt]})
					}
					want = slices.Compact(align.Sort(want))
					if !slices.Equal(words.links[k], want) {
						t.Fatalf("beam %d line %d: word links %v, want the token links %v brought to words: %v", beam, k+1, words.links[k], tokens.links[k], want)
					}
					if name == "words" {
						checkSumsAndMeans(t, k+1, tr.Attention, tok.Attention, srcWord, len(src), outWord, len(out))
					}
				}
				if glued == 0 {
					t.Fatalf("beam %d: no output had a token glued to a word: %q", beam, words.text)
				}
			}
		})
	}
}

// checkSumsAndMeans fails unless words is tokens with each word's columns summed and its rows averaged.
func checkSumsAndMeans(t *testing.T, line int, words, tokens [][]float32, srcWord []int, srcWords int, outWord []int, outWords int) {
	t.Helper()
	want := make([][]float64, len(words))
	count := make([]float64, len(words))
	for r, row := range tokens {
		w := outWords // </s>
		if r < len(outWord) {
			w = outWord[r]
		}
		if want[w] == nil {
			want[w] = make([]float64, srcWords)
		}
		count[w]++
		for i, x := range row {
			want[w][srcWord[i]] += float64(x)
		}
	}
	for r := range want {
		for i := range want[r] {
			if math.Abs(want[r][i]/count[r]-float64(words[r][i])) > 1e-5 {
				t.Fatalf("line %d row %d: %v, want the token rows' mean of column sums %v", line, r, words[r], want[r])
			}
		}
	}
}

// randomLine is a line of 1 to 12 white-space words made of words, with capitals, punctuation, contractions and
// elisions glued on at random, now and then a word of punctuation alone or one the model does not know, and
// runs of spaces or tabs between them.
func randomLine(rng *rand.Rand, words []string) string {
	var b strings.Builder
	for range 1 + rng.IntN(12) {
		if b.Len() > 0 {
			b.WriteString([]string{" ", " ", " ", "  ", "\t"}[rng.IntN(5)])
		}
		w := words[rng.IntN(len(words))]
		switch rng.IntN(12) {
		case 0:
			w = "zqx" + w
		case 1:
			w = []string{".", "-", "'", "(", "...", "?!"}[rng.IntN(6)]
		case 2:
			w = strings.ToUpper(w[:1]) + w[1:]
		}
		if rng.IntN(3) == 0 {
			w = []string{"l'", "(", "d'", "\""}[rng.IntN(4)] + w
		}
		if rng.IntN(3) == 0 {
			w += []string{".", ",", "!", "'s", "n't", ")", "'", ".)", "-" + words[rng.IntN(len(words))]}[rng.IntN(9)]
		}
		b.WriteString(w)
	}
	return b.String()
}

// TestTranslateWordLinksStayInsideTheWords translates random lines (randomLine) with a model of words and one of
// subwords, greedy and under beam search, by argmax and with a threshold: every link lies within the white-space
// words of its input line and of its output line, the attention records have a row per output word (and
// </s>) and a column per input word, labelled with them, and the translations are those of --token-level.
func TestTranslateWordLinksStayInsideTheWords(t *testing.T) {
	src, tgt := punctPairs(50, 2)
	vocab := map[string]bool{}
	for _, line := range append(src, tgt...) {
		for _, w := range data.NewRegexTokenizer(true).Tokenize(line) {
			if r, _ := utf8.DecodeRuneInString(w); unicode.IsLetter(r) {
				vocab[w] = true
			}
		}
	}
	words := make([]string, 0, len(vocab))
	for w := range vocab {
		words = append(words, w)
	}
	slices.Sort(words)
	rng := rand.New(rand.NewPCG(7, 0))
	lines := make([]string, 120)
	for k := range lines {
		lines[k] = randomLine(rng, words)
	}
	for name, m := range punctModels(t) {
		for _, c := range []struct {
			beam      int
			threshold float64
		}{{1, 0}, {3, 0}, {1, 0.1}, {3, 0.1}} {
			t.Run(fmt.Sprintf("%s/beam %d threshold %g", name, c.beam, c.threshold), func(t *testing.T) {
				decode := DecodeOptions{MaxLen: 20, Batch: 8, Beam: c.beam, ReplaceUnk: true}
				got := translateAll(t, m, lines, TranslateRequest{TextOptions: TextOptions{Decode: decode},
					Threshold: c.threshold})
				tokens := translateAll(t, m, lines, TranslateRequest{TextOptions: TextOptions{Decode: decode, TokenLevel: true}})
				beyond := 0 // token links beyond the words: what word links fix
				for k, line := range lines {
					src, out := strings.Fields(line), strings.Fields(got.text[k])
					if got.text[k] != tokens.text[k] {
						t.Fatalf("line %q: %q at the word level, %q at the token level", line, got.text[k], tokens.text[k])
					}
					for _, l := range got.links[k] {
						if l.Src >= len(src) || l.Tgt >= len(out) {
							t.Fatalf("line %q → %q: link %d-%d outside its %d source and %d output words", line, got.text[k], l.Src, l.Tgt, len(src), len(out))
						}
					}
					for _, l := range tokens.links[k] {
						if l.Src >= len(src) || l.Tgt >= len(out) {
							beyond++
						}
					}
					tr := got.records[k]
					if !slices.Equal(tr.Source, src) || !slices.Equal(tr.Output, out) {
						t.Fatalf("line %q: attention of %q → %q, the output %q", line, tr.Source, tr.Output, got.text[k])
					}
					if len(src) > 0 && len(out) > 0 && len(tr.Attention) == 0 {
						t.Fatalf("line %q: no attention", line)
					}
					for _, row := range tr.Attention {
						if len(row) != len(src) {
							t.Fatalf("line %q: a row of %d weights for %d words", line, len(row), len(src))
						}
					}
					var labels []string
					json.Unmarshal(got.raw[k]["output"], &labels)
					if len(labels) != len(tr.Attention) || len(tr.Attention) > len(out) && labels[len(labels)-1] != data.EOSToken {
						t.Fatalf("line %q: output labels %q for %d rows", line, labels, len(tr.Attention))
					}
				}
				if beyond == 0 {
					t.Fatal("no token link pointed past the words of its lines: the random lines test nothing")
				}
			})
		}
	}
}

// TestHeatmapDrawsTheSentenceOfTheSearch: with a beam, Heatmaps draws the sentence and attention of beam search,
// the translation translate writes with that beam, also beside a forced reference; greedy search (a beam of 1)
// draws another sentence for some of these lines.
func TestHeatmapDrawsTheSentenceOfTheSearch(t *testing.T) {
	src, tgt := punctPairs(40, 3)
	tok := data.NewRegexTokenizer(true)
	sources, refs := make([][]string, len(src)), make([][]string, len(src))
	for k := range src {
		sources[k], refs[k] = tok.Tokenize(src[k]), tok.Tokenize(tgt[k])
	}
	for name, m := range punctModels(t) {
		t.Run(name, func(t *testing.T) {
			ck := &model.Checkpoint{Model: m}
			draw := func(beam int, refs [][]string) [][]string {
				maps, err := Heatmaps(context.Background(), HeatmapRequest{Model: ck, ModelPath: "m.ckpt", Sources: sources, Refs: refs,
					Decode: DecodeOptions{MaxLen: 20, Batch: 8, Beam: beam}})
				if err != nil {
					t.Fatal(err)
				}
				out := make([][]string, len(maps))
				for k, hm := range maps {
					out[k] = hm.Output
					if refs != nil {
						out[k] = hm.ModelOutput
					}
				}
				return out
			}
			greedy, beam, besideRefs := draw(1, nil), draw(3, nil), draw(3, refs)
			written := translateAll(t, m, src, TranslateRequest{TextOptions: TextOptions{Decode: DecodeOptions{MaxLen: 20, Batch: 8, Beam: 3}, Tokenized: true, TokenLevel: true}})
			differ := 0
			for k := range src {
				rec := written.records[k]
				if want := labelRows(rec.Output, len(rec.Attention)); !slices.Equal(beam[k], want) {
					t.Fatalf("line %d: heat map of %q, translate --beam 3 wrote %q", k+1, beam[k], want)
				}
				if !slices.Equal(nonNil(besideRefs[k]), rec.Output) {
					t.Fatalf("line %d: the model's output beside the reference is %q, translate --beam 3 wrote %q", k+1, besideRefs[k], rec.Output)
				}
				if !slices.Equal(greedy[k], beam[k]) {
					differ++
				}
			}
			if differ == 0 {
				t.Fatal("greedy search and a beam of 3 chose the same sentences: the test tells nothing")
			}
			t.Logf("%d of %d sentences differ between greedy and beam search", differ, len(src))
		})
	}
}

// TestTranslationJSONLabelsEveryRow: the JSON of a translation ends "output" with "</s>" when the attention has
// its row, in the subwords too, and reads back to the same translation.
func TestTranslationJSONLabelsEveryRow(t *testing.T) {
	tr := Translation{Source: []string{"Mr.", "Smith"}, Output: []string{"M.", "Smith"}, Attention: [][]float32{{1, 0}, {0, 1}, {0.5, 0.5}},
		Subwords: &Subwords{Source: strings.Fields("mr . smith"), Output: strings.Fields("m . smith"), Attention: [][]float32{{1, 0, 0}, {0, 1, 0}, {0, 0, 1}, {0.5, 0, 0.5}},
			SourceWord: []int{0, 0, 1}, OutputWord: []int{0, 0, 1}}}
	cut := Translation{Source: []string{"a"}, Output: []string{"b", "c"}, Attention: [][]float32{{1}, {1}}} // no </s>: stopped by the length limit
	for _, c := range []struct {
		tr                  Translation
		output, subwordsOut string
	}{{tr, "M. Smith </s>", "m . smith </s>"}, {cut, "b c", ""}} {
		raw, err := json.Marshal(c.tr)
		if err != nil {
			t.Fatal(err)
		}
		var fields struct {
			Output   []string
			Subwords struct{ Output []string }
		}
		json.Unmarshal(raw, &fields)
		if strings.Join(fields.Output, " ") != c.output || strings.Join(fields.Subwords.Output, " ") != c.subwordsOut {
			t.Errorf("%s: output %q and subwords' %q, want %q and %q", raw, fields.Output, fields.Subwords.Output, c.output, c.subwordsOut)
		}
		var back Translation
		if err := json.Unmarshal(raw, &back); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(back.Output, c.tr.Output) || !reflect.DeepEqual(back.Attention, c.tr.Attention) ||
			c.tr.Subwords != nil && (!slices.Equal(back.Subwords.Output, c.tr.Subwords.Output) || !reflect.DeepEqual(back.Subwords.Attention, c.tr.Subwords.Attention)) {
			t.Errorf("read back %+v, want %+v", back, c.tr)
		}
	}
}
