package transformer

import (
	"fmt"

	"github.com/attend-nmt/attend/decoder"
	"github.com/attend-nmt/attend/kernels"
)

// Greedy decodes the sentences of mem by taking the most likely word at every step (the lowest id on ties),
// starting from bos, until each has produced eos or maxLen words, as the recurrent decoder's Greedy does: a
// hypothesis keeps its words without eos, one row of attention weights (Step's, cut to its source length) per
// word and for the final eos, and whether it ended with eos. Ended sentences leave the batch, so later steps
// cost only the sentences still being decoded.
func (m *Model[T]) Greedy(mem *Memory[T], bos, eos, maxLen int) []decoder.Hypothesis {
	rows, s, v := mem.Rows, mem.SrcLen, m.Cfg.TgtVocab
	hyps := make([]decoder.Hypothesis, rows)
	if maxLen < 1 || rows == 0 {
		return hyps
	}
	st := m.Start(mem)
	sent, prev := make([]int, rows), make([]int, rows) // each row's sentence and previous word
	tokens, attn := make([][]int, rows), make([][]float32, rows)
	for r := range sent {
		sent[r], prev[r] = r, bos
	}
	logits, weights := make([]T, rows*v), make([]T, rows*s)
	live := make([]int, 0, rows)
	for step := 1; st.Rows > 0; step++ {
		n := st.Rows
		m.Step(st, prev[:n], logits[:n*v], weights[:n*s])
		live = live[:0]
		for r, i := range sent[:n] {
			best, length := kernels.Argmax(logits[r*v:(r+1)*v]), mem.Lengths[i]
			for _, w := range weights[r*s : r*s+length] {
				attn[i] = append(attn[i], float32(w))
			}
			if best != eos {
				tokens[i] = append(tokens[i], best)
				prev[r] = best
			}
			if best == eos || step >= maxLen {
				hyps[i] = hypothesis(tokens[i], attn[i], step, best == eos, length)
				continue
			}
			live = append(live, r)
		}
		if len(live) < n {
			st.Reorder(live)
			for to, r := range live {
				sent[to], prev[to] = sent[r], prev[r]
			}
		}
	}
	return hyps
}

// hypothesis is a finished sentence of Greedy: its words, and its steps rows of attention of length weights each,
// flat in attn.
func hypothesis(tokens []int, attn []float32, steps int, finished bool, length int) decoder.Hypothesis {
	h := decoder.Hypothesis{Tokens: tokens, Finished: finished, Attention: make([][]float32, steps)}
	for i := range h.Attention {
		h.Attention[i] = attn[i*length : (i+1)*length : (i+1)*length]
	}
	return h
}

// Beam decodes the sentences of mem with beam search and returns, for each, up to opts.NBest hypotheses sorted
// by Score, best first: decoder.BeamSelection chooses the hypotheses, with the recurrent decoder's ranking,
// penalties and limits, from Step's logits and attention; the state follows the beams with Reorder. A sentence's
// Width beams share its memory's keys and values, and the first step decodes one row per sentence.
func (m *Model[T]) Beam(mem *Memory[T], bos, eos int, opts decoder.BeamOptions) ([][]decoder.Scored, error) {
	sel, err := decoder.NewBeamSelection[T](mem.Lengths[:mem.Rows], mem.SrcLen, m.Cfg.TgtVocab, bos, eos, opts)
	if err != nil {
		return nil, fmt.Errorf("transformer: beam search: %w", err)
	}
	rows, s, v := mem.Rows*opts.Width, mem.SrcLen, m.Cfg.TgtVocab
	logits, weights := make([]T, rows*v), make([]T, rows*s)
	st := m.Start(mem)
	for sel.Rows() > 0 {
		n := sel.Rows()
		m.Step(st, sel.Prev(), logits[:n*v], weights[:n*s])
		if sel.Choose(logits, weights) {
			st.Reorder(sel.From())
		}
	}
	return sel.Best(), nil
}
