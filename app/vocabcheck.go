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
func checkVocabularies(w io.Writer, d model.DataConfig, src, tgt *data.Vocab, srcSents, tgtSents [][]string) error {
	limits, leaveVerb, makeVerb := fmt.Sprintf("data.min_freq %d", d.MinFreq), "leaves", "makes"
	if d.MaxVocab > 0 {
		limits, leaveVerb, makeVerb = limits+fmt.Sprintf(" and data.max_vocab %d", d.MaxVocab), "leave", "make"
	}
	for _, side := range []struct {
		name  string
		vocab *data.Vocab
		sents [][]string
	}{{"source", src, srcSents}, {"target", tgt, tgtSents}} {
		tokens, unknown := 0, 0
		freq := map[string]int{} // counted only when the vocabulary holds no word, to say how frequent the words are
		specialsOnly := side.vocab.Size() <= 4
		for _, s := range side.sents {
			for _, tok := range s {
				tokens++
				if side.vocab.ID(tok) == data.UnkID {
					unknown++
					if specialsOnly {
						freq[tok]++
					}
				}
			}
		}
		if specialsOnly {
			most := 0
			for _, n := range freq {
				most = max(most, n)
			}
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

// ReversedShare is the share of a side's tokens above which checkDirection calls a corpus reversed: more of its
// source tokens than this unknown to the model's source vocabulary and known to its target vocabulary, and the
// same of its target tokens the other way round.
const ReversedShare = 0.5

// checkDirection refuses a corpus given the wrong way round for a model: its source side in the model's target
// language and its target side in the source language, which the vocabularies show (see ReversedShare). A
// model with a shared vocabulary knows both languages on both sides and is never refused.
func checkDirection(corpus Corpus, src, tgt *data.Vocab, pairs []data.Pair) error {
	// ownUnknown: the side's tokens its own vocabulary lacks; otherKnown: those of them the other vocabulary has.
	shares := func(own, other *data.Vocab, side func(data.Pair) []string) (ownUnknown, otherKnown float64) {
		tokens, unknown, known := 0, 0, 0
		for _, p := range pairs {
			for _, tok := range side(p) {
				tokens++
				if own.ID(tok) == data.UnkID {
					unknown++
					if other.ID(tok) != data.UnkID {
						known++
					}
				}
			}
		}
		return float64(unknown) / float64(max(tokens, 1)), float64(known) / float64(max(tokens, 1))
	}
	srcUnknown, srcInTgt := shares(src, tgt, func(p data.Pair) []string { return p.Src })
	tgtUnknown, tgtInSrc := shares(tgt, src, func(p data.Pair) []string { return p.Tgt })
	if srcInTgt <= ReversedShare || tgtInSrc <= ReversedShare {
		return nil
	}
	swap := "swap --src and --tgt"
	if corpus.TSV != "" {
		swap = "swap the two columns of " + corpus.TSV
	}
	return fmt.Errorf("%s is the wrong way round for this model: %.0f%% of its source tokens are unknown to the model's source vocabulary (%.0f%% are words of its target vocabulary), and %.0f%% of its target tokens unknown to the target vocabulary (%.0f%% are source words); %s",
		corpus, 100*srcUnknown, 100*srcInTgt, 100*tgtUnknown, 100*tgtInSrc, swap)
}
