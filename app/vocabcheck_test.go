package app

import (
	"bytes"
	"strings"
	"testing"

	"github.com/attend-nmt/attend/data"
	"github.com/attend-nmt/attend/model"
)

// TestCheckVocabularies builds vocabularies at several data.min_freq over a small corpus: one that keeps no word
// is refused with the counts, one that leaves more than a tenth of the tokens <unk> is warned about, with them,
// and a normal one passes in silence.
func TestCheckVocabularies(t *testing.T) {
	var src, tgt [][]string
	for i := range 30 { // "der" and "the" 30 times, "mann" and "man" 10 times, one rare word per sentence
		s, g := []string{"der", "x" + string(rune('a'+i))}, []string{"the", "y" + string(rune('a'+i))}
		if i%3 == 0 {
			s, g = append(s, "mann"), append(g, "man")
		}
		src, tgt = append(src, s), append(tgt, g)
	}
	for _, c := range []struct {
		name              string
		minFreq, maxVocab int
		err, warning      []string // nil: none
	}{
		{"every word", 1, 0, nil, nil},
		{"most words rare", 2, 0, nil, []string{"data.min_freq 2 makes 42.9% of the source tokens <unk> (30 of 70", "keeps 2 words"}},
		{"capped", 1, 5, nil, []string{"data.min_freq 1 and data.max_vocab 5 make 57.1% of the source tokens <unk>"}},
		{"no word left", 100000, 0, []string{"data.min_freq 100000 leaves the source vocabulary without a word", "all 70 source tokens", "occurs 30 times"}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := model.DataConfig{MinFreq: c.minFreq, MaxVocab: c.maxVocab}
			var w bytes.Buffer
			err := checkVocabularies(&w, d, data.BuildVocab(src, c.minFreq, c.maxVocab), data.BuildVocab(tgt, c.minFreq, c.maxVocab), countTokens(src), countTokens(tgt))
			if (err != nil) != (c.err != nil) || (w.Len() > 0) != (c.warning != nil) {
				t.Fatalf("checkVocabularies = %v, warning %q; want error %v, warning %v", err, w.String(), c.err, c.warning)
			}
			for _, s := range c.err {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not say %q", err, s)
				}
			}
			for _, s := range c.warning {
				if !strings.Contains(w.String(), s) {
					t.Errorf("warning %q does not say %q", w.String(), s)
				}
			}
		})
	}
}

// TestCheckDirectionRefusesAReversedCorpus: an English→German model's corpus given German→English is refused
// with the shares and what to do; the right way round, a corpus of unknown words and a shared vocabulary pass.
func TestCheckDirectionRefusesAReversedCorpus(t *testing.T) {
	en, de := strings.Fields("the dog sees a cat . the cat sleeps ."), strings.Fields("der hund sieht eine katze . die katze schläft .")
	src, tgt := data.BuildVocab([][]string{en}, 1, 0), data.BuildVocab([][]string{de}, 1, 0)
	shared := data.BuildVocab([][]string{en, de}, 1, 0)
	right := []data.Pair{{Src: en, Tgt: de}}
	reversed := []data.Pair{{Src: de, Tgt: en}}
	other := []data.Pair{{Src: strings.Fields("le chien voit"), Tgt: strings.Fields("el perro ve")}}
	files := Corpus{Src: "train.de", Tgt: "train.en"}
	revSrc, revTgt := pairCounts(reversed)
	err := checkDirection(files, src, tgt, revSrc, revTgt)
	if err == nil || !strings.Contains(err.Error(), "train.de and train.en is the wrong way round") || !strings.Contains(err.Error(), "swap --src and --tgt") {
		t.Errorf("reversed corpus: %v", err)
	}
	if err := checkDirection(Corpus{TSV: "train.tsv"}, src, tgt, revSrc, revTgt); err == nil || !strings.Contains(err.Error(), "swap the two columns of train.tsv") {
		t.Errorf("reversed TSV: %v", err)
	}
	for name, c := range map[string]struct {
		src, tgt *data.Vocab
		pairs    []data.Pair
	}{"right way round": {src, tgt, right}, "unknown words": {src, tgt, other}, "shared vocabulary": {shared, shared, reversed}} {
		srcSide, tgtSide := pairCounts(c.pairs)
		if err := checkDirection(files, c.src, c.tgt, srcSide, tgtSide); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// pairCounts counts the tokens of each side of pairs.
func pairCounts(pairs []data.Pair) (src, tgt tokenCounts) {
	var s, t [][]string
	for _, p := range pairs {
		s, t = append(s, p.Src), append(t, p.Tgt)
	}
	return countTokens(s), countTokens(t)
}

// countTokens counts the tokens of sentences.
func countTokens(sents [][]string) tokenCounts {
	index := map[string]int{}
	var c tokenCounts
	for _, s := range sents {
		for _, tok := range s {
			k, ok := index[tok]
			if !ok {
				k = len(c.tokens)
				index[tok] = k
				c.tokens, c.counts = append(c.tokens, tok), append(c.counts, 0)
			}
			c.counts[k]++
		}
	}
	return c
}
