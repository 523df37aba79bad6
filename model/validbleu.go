package model

import (
	"context"

	"github.com/attend-nmt/attend/data"
	"github.com/attend-nmt/attend/metrics"
)

// refUnknown stands for a reference word outside the target vocabulary: unlike <unk>, no output word matches it.
const refUnknown = "\x00<unk in reference>"

// ValidBLEU greedy-decodes the first n of examples (all of them when there are fewer) and returns the corpus
// BLEU of the outputs against their targets, tokenized and lowercased as the model reads them (metrics.BLEU,
// the benchmark's figure), in words for a model trained on subwords. Reference words outside the target
// vocabulary match nothing, so an output <unk> scores no n-gram. It stops between batches when ctx is cancelled and returns ctx's error.
func ValidBLEU(ctx context.Context, m *Seq2Seq[float32], examples []data.Example, n, batchSize, maxLen int) (float64, error) {
	examples = examples[:min(n, len(examples))]
	hyps, refs := make([][]string, len(examples)), make([][]string, len(examples))
	for i, ex := range examples {
		refs[i] = make([]string, len(ex.Tgt))
		for j, id := range ex.Tgt {
			refs[i][j] = m.TgtVocab.Token(id)
			if id == data.UnkID {
				refs[i][j] = refUnknown
			}
		}
		hyps[i] = []string{}
	}
	for _, b := range data.MakeBatches(examples, data.BatchOptions{BatchSize: batchSize}, nil) {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		for r, h := range m.Greedy(&b, maxLen) {
			words := make([]string, len(h.Tokens))
			for j, id := range h.Tokens {
				words[j] = m.TgtVocab.Token(id)
			}
			hyps[b.Index[r]] = words
		}
	}
	if m.Subwords != nil {
		// BLEU of words, as `attend eval` scores them: a model's subwords would count every piece of a long
		// word as an n-gram of its own. A reference subword outside the vocabulary spoils its whole word.
		for i := range hyps {
			hyps[i], refs[i] = data.UndoBPE(hyps[i]), data.UndoBPE(refs[i])
		}
	}
	return metrics.BLEU(hyps, refs), nil
}
