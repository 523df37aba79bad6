package app

import (
	"bytes"
	"context"
	"encoding/json"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/attend-nmt/attend/data"
	"github.com/attend-nmt/attend/decoder"
	"github.com/attend-nmt/attend/model"
)

func TestReplaceUnkCopiesTheMostAttendedSourceWord(t *testing.T) {
	v := data.BuildVocab([][]string{{"a", "b"}}, 1, 0)
	h := decoder.Hypothesis{
		Tokens:    []int{data.UnkID, v.ID("a"), data.UnkID},
		Attention: [][]float32{{0.1, 0.7, 0.2}, {0.9, 0.05, 0.05}, {0.3, 0.3, 0.4}, {1, 0, 0}},
	}
	source := []string{"x", "y", "z"}
	if got, want := outputTokens(v, h, source, true), []string{"y", "a", "z"}; !slices.Equal(got, want) {
		t.Fatalf("with replace-unk: %q, want %q", got, want)
	}
	if got, want := outputTokens(v, h, source, false), []string{"<unk>", "a", "<unk>"}; !slices.Equal(got, want) {
		t.Fatalf("without: %q, want %q", got, want)
	}
}

// TestTranslateWritesNBestListsWithScores: --n-best 3 writes three "i ||| text ||| F0= score ||| score" lines per sentence,
// best first, and the attention record of each sentence is its best hypothesis'.
func TestTranslateWritesNBestListsWithScores(t *testing.T) {
	input := "a b c\nd e\n\ne a\n"
	var out, attn bytes.Buffer
	_, err := Translate(context.Background(), TranslateRequest{TextOptions: TextOptions{Tokenized: true, Decode: DecodeOptions{MaxLen: 6, Batch: 2, Beam: 3, NBest: 3}},
		Model: untrainedModel(t), Input: strings.NewReader(input), InputName: "in", Output: &out, Attention: &attn})
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	var records []Translation
	for _, rec := range strings.Split(strings.TrimSpace(attn.String()), "\n") {
		var tr Translation
		if err := json.Unmarshal([]byte(rec), &tr); err != nil {
			t.Fatal(err)
		}
		records = append(records, tr)
	}
	perSentence := map[int][]float64{}
	firstText := map[int]string{}
	for _, line := range lines {
		fields := strings.Split(line, " ||| ")
		if len(fields) != 4 || !strings.HasPrefix(fields[2], "F0= ") {
			t.Fatalf("line %q is not Marian's 'i ||| text ||| F0= score ||| score'", line)
		}
		i, err1 := strconv.Atoi(fields[0])
		score, err2 := strconv.ParseFloat(fields[3], 64)
		if err1 != nil || err2 != nil {
			t.Fatalf("line %q: %v %v", line, err1, err2)
		}
		if f0, err := strconv.ParseFloat(strings.TrimPrefix(fields[2], "F0= "), 64); err != nil || f0 != score {
			t.Fatalf("line %q: feature F0 is not the score", line)
		}
		if _, ok := firstText[i]; !ok {
			firstText[i] = fields[1]
		}
		perSentence[i] = append(perSentence[i], score)
	}
	for i, want := range []int{3, 3, 1, 3} { // the empty line has one empty translation
		scores := perSentence[i]
		if len(scores) != want {
			t.Fatalf("sentence %d has %d lines, want %d:\n%s", i, len(scores), want, out.String())
		}
		for j := 1; j < len(scores); j++ {
			if scores[j] > scores[j-1] {
				t.Fatalf("sentence %d: scores %v not best first", i, scores)
			}
		}
		if got := strings.Join(records[i].Output, " "); got != firstText[i] {
			t.Fatalf("sentence %d: attention record of %q, best translation %q", i, got, firstText[i])
		}
		if rows := len(records[i].Attention); want > 1 && rows != len(records[i].Output) && rows != len(records[i].Output)+1 {
			t.Fatalf("sentence %d: %d attention rows for %d words", i, rows, len(records[i].Output))
		}
	}
}

// TestTranslateDetokenizesUnlessAskedForTokens translates the same input both ways with a random model whose
// target words are mostly punctuation: each default line is the detokenized form of the --tokenized line.
func TestTranslateDetokenizesUnlessAskedForTokens(t *testing.T) {
	input := "a b c\nd e\n\ne a b\nc c d e a\n"
	src := data.BuildVocab([][]string{strings.Fields("a b c d e")}, 1, 0)
	tgt := data.BuildVocab([][]string{strings.Fields(", . ! ' a s t")}, 1, 0)
	m, err := model.New[float32](tinyTrainConfig().Model, src, tgt)
	if err != nil {
		t.Fatal(err)
	}
	translate := func(tokenized bool) []string {
		var out bytes.Buffer
		_, err := Translate(context.Background(), TranslateRequest{TextOptions: TextOptions{Tokenized: tokenized, Decode: DecodeOptions{MaxLen: 6, Batch: 4, Beam: 2}},
			Model: m, Input: strings.NewReader(input), InputName: "in", Output: &out})
		if err != nil {
			t.Fatal(err)
		}
		return strings.Split(out.String(), "\n")
	}
	// The first random model (of 50) with an output whose spacing detokenization changes.
	for seed := uint64(1); seed <= 50; seed++ {
		m.Init(rand.New(rand.NewPCG(seed, 0)))
		text, tokens := translate(false), translate(true)
		differ := 0
		for i := range tokens {
			if want := data.Detokenize(strings.Fields(tokens[i])); text[i] != want {
				t.Fatalf("seed %d line %d: %q, want %q", seed, i, text[i], want)
			}
			if text[i] != tokens[i] {
				differ++
			}
		}
		if differ > 0 {
			return
		}
	}
	t.Fatal("no model of 50 wrote an output with a space to remove")
}

func TestTokLCKeepsUnkWhole(t *testing.T) {
	if got, want := tokLC("A <unk> sits, <unk>."), []string{"a", "<unk>", "sits", ",", "<unk>", "."}; !slices.Equal(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}
}
