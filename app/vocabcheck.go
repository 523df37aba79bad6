package app

import (
	"fmt"
	"io"

	"github.com/attend-nmt/attend/data"
	"github.com/attend-nmt/attend/model"
)

// checkVocabularies judges the vocabularies a new run built from its corpus under data.min_freq and
// data.max_vocab. A vocabulary of the special tokens alone is an error: every word of that side would be <unk>,
// and the model could learn nothing but <unk>. A vocabulary that leaves more than UnkWarning of its side's
// tokens <unk> gets a warning with the counts on w, as a threshold set too high usually is a mistake (OpenNMT-py
// and Marian build such a vocabulary without a word; their users expect at least a warning).
func checkVocabularies(w io.Writer, d model.DataConfig, src, tgt *data.Vocab, srcSide, tgtSide tokenCounts) error {
	limits, leaveVerb, makeVerb := fmt.Sprintf("data.min_freq %d", d.MinFreq), "leaves", "makes"
	if d.MaxVocab > 0 {
		limits, leaveVerb, makeVerb = limits+fmt.Sprintf(" and data.max_vocab %d", d.MaxVocab), "leave", "make"
	}
	for _, side := range []struct {
		name   string
		vocab  *data.Vocab
		counts tokenCounts
	}{{"source", src, srcSide}, {"target", tgt, tgtSide}} {
		tokens, unknown, most := side.counts.unknown(side.vocab)
		if side.vocab.Size() <= 4 {
			return fmt.Errorf("%s %s the %s vocabulary without a word, only <pad> <unk> <s> </s>: all %d %s tokens would be <unk> "+
				"(its most frequent word occurs %d times); lower data.min_freq", limits, leaveVerb, side.name, tokens, side.name, most)
		}
		if share := float64(unknown) / float64(max(tokens, 1)); share > UnkWarning {
			fmt.Fprintf(w, "warning: %s %s %.1f%% of the %s tokens <unk> (%d of %d; the vocabulary keeps %d words and 4 special tokens)\n",
				limits, makeVerb, 100*share, side.name, unknown, tokens, side.vocab.Size()-4)
		}
	}
	return nil
}

// tokenCounts is one side of a corpus: its distinct tokens and how often each occurs.
type tokenCounts struct {
	tokens []string
	counts []int64
}

// unknown returns how many tokens the side has, how many of them vocab lacks, and how often the most frequent
// of those occurs.
func (c tokenCounts) unknown(vocab *data.Vocab) (tokens, unknown, most int64) {
	for k, n := range c.counts {
		tokens += n
		if vocab.ID(c.tokens[k]) == data.UnkID {
			unknown += n
			most = max(most, n)
		}
	}
	return tokens, unknown, most
}

// ReversedShare is the least share of a side's tokens that its own vocabulary lacks for checkDirection to call
// a corpus reversed; the other vocabulary must also lack fewer than half as many.
const ReversedShare = 0.2

// checkDirection refuses a corpus given the wrong way round for a model: its source side in the model's target
// language and its target side in the source language. The vocabularies show it: on each side, at least
// ReversedShare of the tokens are unknown to the side's own vocabulary and less than half as many to the other
// one. (On the small Multi30k De→En model with 2,000 pairs the wrong way round, 50.5% of the English source
// tokens are unknown to the German vocabulary and 1.0% to the English one; 78.7% and 3.0% on the German side.
// The right way round the figures swap.) A model with a shared vocabulary, or a corpus in a third language,
// is never refused.
func checkDirection(corpus Corpus, src, tgt *data.Vocab, srcSide, tgtSide tokenCounts) error {
	share := func(c tokenCounts, vocab *data.Vocab) float64 {
		tokens, unknown, _ := c.unknown(vocab)
		return float64(unknown) / float64(max(tokens, 1))
	}
	srcOwn, srcOther := share(srcSide, src), share(srcSide, tgt)
	tgtOwn, tgtOther := share(tgtSide, tgt), share(tgtSide, src)
	if srcOwn < ReversedShare || tgtOwn < ReversedShare || srcOwn < 2*srcOther || tgtOwn < 2*tgtOther {
		return nil
	}
	swap := "swap --src and --tgt"
	if corpus.TSV != "" {
		swap = "swap the two columns of " + corpus.TSV
	}
	return fmt.Errorf("%s is the wrong way round for this model: %.1f%% of its source tokens are unknown to the model's source vocabulary but %.1f%% to its target vocabulary, and %.1f%% of its target tokens unknown to the target vocabulary but %.1f%% to the source vocabulary; %s",
		corpus, 100*srcOwn, 100*srcOther, 100*tgtOwn, 100*tgtOther, swap)
}
