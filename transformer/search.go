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
	return m.single().Greedy([]*Memory[T]{mem}, bos, eos, maxLen)
}

// Greedy is Model.Greedy with the ensemble: mems are the members' memories of the batch, in order. Each step
// takes the word of the highest mean log-probability (the lowest id on ties).
func (e *Ensemble[T]) Greedy(mems []*Memory[T], bos, eos, maxLen int) []decoder.Hypothesis {
	e.checkMems(mems)
	mem, v := mems[0], e.members[0].Cfg.TgtVocab
	rows, s := mem.Rows, mem.SrcLen
	hyps := make([]decoder.Hypothesis, rows)
	if maxLen < 1 || rows == 0 {
		return hyps
	}
	es := e.start(mems, rows)
	sent, prev := make([]int, rows), make([]int, rows) // each row's sentence and previous word
	tokens, attn := make([][]int, rows), make([][]float32, rows)
	for r := range sent {
		sent[r], prev[r] = r, bos
	}
	var mean []float64 // a row's mean log-probabilities, memberRows each member's logits of it
	var exps []T
	memberRows := make([][]T, len(e.members))
	if e.mean {
		mean, exps = make([]float64, v), make([]T, v)
	}
	live := make([]int, 0, rows)
	for step := 1; es.states[0].Rows > 0; step++ {
		n := es.states[0].Rows
		es.step(prev[:n])
		logits, weights := es.logits[0], es.weights[0]
		live = live[:0]
		for r, i := range sent[:n] {
			var best int
			if e.mean {
				for k, l := range es.logits {
					memberRows[k] = l[r*v : (r+1)*v]
				}
				decoder.MeanLogProbs(mean, memberRows, exps)
				best = kernels.Argmax(mean)
			} else {
				best = kernels.Argmax(logits[r*v : (r+1)*v])
			}
			length := mem.Lengths[i]
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
			es.reorder(live)
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
	return m.single().Beam([]*Memory[T]{mem}, bos, eos, opts)
}

// Beam is Model.Beam with the ensemble: mems are the members' memories of the batch, in order. A hypothesis'
// LogProb is the mean of the members' log-probabilities of it; its attention is the first member's.
func (e *Ensemble[T]) Beam(mems []*Memory[T], bos, eos int, opts decoder.BeamOptions) ([][]decoder.Scored, error) {
	e.checkMems(mems)
	meanOf := 0 // members whose mean ranks the words; 0 when the one model's logits rank them
	if e.mean {
		meanOf = len(e.members)
	}
	mem := mems[0]
	sel, err := decoder.NewBeamSelection[T](mem.Lengths[:mem.Rows], mem.SrcLen, e.members[0].Cfg.TgtVocab, bos, eos, opts, meanOf)
	if err != nil {
		return nil, fmt.Errorf("transformer: beam search: %w", err)
	}
	es := e.start(mems, mem.Rows*opts.Width)
	for sel.Rows() > 0 {
		if opts.Stopped() {
			return nil, decoder.ErrStopped
		}
		es.step(sel.Prev())
		if opts.Stopped() { // and once more between the step's two long parts, the products and the choice
			return nil, decoder.ErrStopped
		}
		if sel.Choose(es.logits, es.weights[0]) {
			es.reorder(sel.From())
		}
	}
	return sel.Best(), nil
}
