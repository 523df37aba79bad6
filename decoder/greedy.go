package decoder

import (
	"github.com/attend-nmt/attend/encoder"
	"github.com/attend-nmt/attend/kernels"
)

// Hypothesis is one decoded sentence: the target ids without </s>, and for each emitted id (and the final </s>
// when it was produced) the attention weights over the source words.
type Hypothesis struct {
	Tokens    []int
	Attention [][]float32 // len(Tokens) or len(Tokens)+1 rows of srcLen weights
	Finished  bool        // ended with </s> rather than at the length limit
}

// Greedy decodes a batch by taking the most likely word at every step, starting from bos, until every row has
// produced eos or maxLen words. lengths are the real source lengths of the rows.
func (d *Decoder[T]) Greedy(enc *encoder.Output[T], lengths []int, bos, eos, maxLen int) []Hypothesis {
	rows, v, srcLen := enc.Rows, d.Cfg.Vocab, enc.SrcLen
	mem, st := d.Start(enc, lengths)
	buf := d.NewScratch(rows, srcLen)
	logits := make([]T, rows*v)
	weights := make([]T, rows*srcLen)
	prev := make([]int, rows)
	for r := range prev {
		prev[r] = bos
	}
	hyps := make([]Hypothesis, rows)
	live := rows
	for t := 0; t < maxLen && live > 0; t++ {
		d.Step(st, prev, mem, buf, logits, weights)
		for r := 0; r < rows; r++ {
			if hyps[r].Finished {
				continue
			}
			best := argmax(logits[r*v : (r+1)*v])
			att := make([]float32, lengths[r])
			for i := range att {
				att[i] = float32(weights[r*srcLen+i])
			}
			hyps[r].Attention = append(hyps[r].Attention, att)
			if best == eos {
				hyps[r].Finished = true
				live--
			} else {
				hyps[r].Tokens = append(hyps[r].Tokens, best)
			}
			prev[r] = best
		}
	}
	return hyps
}

func argmax[T kernels.Float](xs []T) int {
	best := 0
	for i, x := range xs {
		if x > xs[best] {
			best = i
		}
	}
	return best
}
