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
// produced eos or maxLen words. lengths are the real source lengths of the rows. Finished rows leave the batch,
// so the work of a step shrinks with the number of sentences still being decoded.
func (d *Decoder[T]) Greedy(enc *encoder.Output[T], lengths []int, bos, eos, maxLen int) []Hypothesis {
	rows, v, srcLen := enc.Rows, d.Cfg.Vocab, enc.SrcLen
	mem, st := d.Start(enc, append([]int(nil), lengths...))
	mem.States = append([]T(nil), mem.States...) // compaction rewrites the memory in place
	buf := d.NewScratch(rows, srcLen)
	logits := make([]T, rows*v)
	weights := make([]T, rows*srcLen)
	prev := make([]int, rows)
	alive := make([]int, rows) // alive[k] is the original row of batch row k
	for r := range prev {
		prev[r], alive[r] = bos, r
	}
	hyps := make([]Hypothesis, rows)
	for t := 0; t < maxLen && len(alive) > 0; t++ {
		n := len(alive)
		d.Step(st, prev[:n], mem, buf, logits[:n*v], weights[:n*srcLen])
		keep := 0
		for k, r := range alive {
			best := argmax(logits[k*v : (k+1)*v])
			att := make([]float32, lengths[r])
			for i := range att {
				att[i] = float32(weights[k*srcLen+i])
			}
			hyps[r].Attention = append(hyps[r].Attention, att)
			if best == eos {
				hyps[r].Finished = true
				continue
			}
			hyps[r].Tokens = append(hyps[r].Tokens, best)
			prev[keep] = best
			if keep != k {
				d.moveRow(st, mem, k, keep)
			}
			alive[keep] = r
			keep++
		}
		alive = alive[:keep]
		st.Rows, mem.Rows = keep, keep
	}
	return hyps
}

// moveRow copies batch row from to row to in the decoder state and the attention memory (to < from).
func (d *Decoder[T]) moveRow(st *State[T], mem *Memory[T], from, to int) {
	h, s, md, a := d.Cfg.Hidden, mem.SrcLen, d.Cfg.MemDim, d.Attn.KeyWidth()
	for _, x := range st.rowSlices() {
		copy(x[to*h:(to+1)*h], x[from*h:(from+1)*h])
	}
	copy(mem.States[to*s*md:(to+1)*s*md], mem.States[from*s*md:(from+1)*s*md])
	copy(mem.Keys[to*s*a:(to+1)*s*a], mem.Keys[from*s*a:(from+1)*s*a])
	mem.Lengths[to] = mem.Lengths[from]
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
