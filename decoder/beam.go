package decoder

import (
	"fmt"
	"math"
	"slices"

	"github.com/attend-nmt/attend/encoder"
	"github.com/attend-nmt/attend/kernels"
)

// BeamOptions are the settings of Beam.
type BeamOptions struct {
	Width int // K, hypotheses kept per sentence at every step (at least 1; 1 is greedy search)
	NBest int // hypotheses returned per sentence, best first: 1 to Width (0: 1)
	// MaxLen is the most words a hypothesis may have (at least 1). With MaxLenRatio > 0 a sentence of n source
	// words stops at min(MaxLen, max(1, ⌈MaxLenRatio·n⌉)) words instead.
	MaxLen      int
	MaxLenRatio float64
	Alpha       float64 // GNMT length penalty exponent (0: rank by plain log-probability)
	Beta        float64 // GNMT coverage penalty weight (0: none)
}

// Validate reports a setting out of range.
func (o BeamOptions) Validate() error {
	switch {
	case o.Width < 1:
		return fmt.Errorf("decoder: beam width %d; want at least 1", o.Width)
	case o.NBest < 0 || o.NBest > o.Width:
		return fmt.Errorf("decoder: n-best %d; want 1 to the beam width %d", o.NBest, o.Width)
	case o.MaxLen < 1:
		return fmt.Errorf("decoder: max length %d; want at least 1", o.MaxLen)
	case o.MaxLenRatio < 0 || math.IsNaN(o.MaxLenRatio) || math.IsInf(o.MaxLenRatio, 0):
		return fmt.Errorf("decoder: max length ratio %v; want 0 (none) or more", o.MaxLenRatio)
	case o.Alpha < 0 || math.IsNaN(o.Alpha):
		return fmt.Errorf("decoder: length penalty alpha %v; want 0 or more", o.Alpha)
	case o.Beta < 0 || math.IsNaN(o.Beta):
		return fmt.Errorf("decoder: coverage penalty beta %v; want 0 or more", o.Beta)
	}
	return nil
}

// limit is the most words a sentence of srcLen source words may get.
func (o BeamOptions) limit(srcLen int) int {
	if o.MaxLenRatio <= 0 {
		return o.MaxLen
	}
	return min(o.MaxLen, max(1, int(math.Ceil(o.MaxLenRatio*float64(srcLen)))))
}

// Scored is a hypothesis of Beam with its scores.
type Scored struct {
	Hypothesis
	LogProb float64 // Σ log p of the emitted words and of the final </s> when Finished
	// Score ranks the n-best list: LogProb / LengthPenalty(len(Tokens)+1 if Finished else len(Tokens), α) plus
	// CoveragePenalty(Attention, β).
	Score float64
}

// beamNode is one word of a hypothesis in the search's tree: its parent node (-1 for the root), the word and
// the attention it was produced with. A hypothesis is read by walking up from its last node.
type beamNode struct {
	parent int
	token  int
	attn   []float32
}

// candidate is one extension of a live hypothesis: row's hypothesis followed by token, with its total
// log-probability.
type candidate struct {
	logProb    float64
	row, token int
}

// Beam decodes a batch with beam search and returns, for each row, up to opts.NBest hypotheses sorted by
// Score, best first; lengths are the real source lengths of the rows. Each sentence keeps opts.Width live
// hypotheses, all in one batch of rows×Width decoder rows. At every step each sentence's Width·Vocab
// extensions are ranked by log-probability; those among the best Width that end in eos are set aside as
// finished, and the best Width that do not become the next live hypotheses. A sentence is done when Width
// hypotheses have finished, or at its length limit, where its live hypotheses are set aside unfinished; done
// sentences leave the batch. With Width 1 it is exactly Greedy. Every hypothesis keeps the attention rows of
// its own words (and of its </s>), cut to its source length.
func (d *Decoder[T]) Beam(enc *encoder.Output[T], lengths []int, bos, eos int, opts BeamOptions) ([][]Scored, error) {
	return d.BeamShortlist(enc, lengths, bos, eos, opts, nil)
}

// BeamShortlist is Beam where each sentence (row of enc) may use only the candidate words that short lists for
// it (nil: every word): the batch's logits are computed for the union of its sentences' candidates, and each
// sentence's log-probabilities are normalised over its own candidates (so its scores are those of a model that
// knows only those words).
func (d *Decoder[T]) BeamShortlist(enc *encoder.Output[T], lengths []int, bos, eos int, opts BeamOptions, short *Shortlist[T]) ([][]Scored, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	k, v, srcLen, sents := opts.Width, d.Cfg.Vocab, enc.SrcLen, enc.Rows
	var words *shortlist[T] // the batch's candidates, fixed for the search
	if short != nil {
		short.check(sents, v)
		words = newShortlist(short.Output, v, d.OutIn())
		for _, c := range short.Candidates[:sents] {
			words.add(c)
		}
	}
	nBest := max(opts.NBest, 1)
	// Row s·k + b of the search batch is beam b of sentence s: the encoder output repeated k times.
	wide := repeatRows(enc, k)
	wideLengths := make([]int, sents*k)
	for r := range wideLengths {
		wideLengths[r] = lengths[r/k]
	}
	mem, st := d.Start(wide, wideLengths)
	rows := sents * k
	buf := d.NewScratch(rows, srcLen)
	logits := make([]T, rows*v)
	weights := make([]T, rows*srcLen)
	expBuf := make([]T, v)
	rowLogits := make([]T, v) // a row's logits of its own candidates, with a shortlist

	live := make([]int, sents) // live[j] is the sentence of block j (rows j·k … j·k+k-1)
	for s := range live {
		live[s] = s
	}
	prev := make([]int, rows)
	score := make([]float64, rows) // log-probability of each row's hypothesis; -Inf for an unused row
	node := make([]int, rows)      // each row's last node
	for r := range prev {
		prev[r], node[r] = bos, -1
		if r%k != 0 {
			score[r] = math.Inf(-1) // at the start the k beams are one and the same: keep one
		}
	}
	var nodes []beamNode
	finished := make([][]Scored, sents)

	// Scratch of the selection, reused at every step.
	cands := make([]candidate, 0, 2*k)
	from := make([]int, rows)
	nextTok := make([]int, rows)
	nextScore := make([]float64, rows)
	nextNode := make([]int, rows)
	next := d.newState(rows)       // the states of the next step's rows
	keptFrom := make([]int, sents) // old block of each kept block

	for t := 0; len(live) > 0; t++ {
		n := len(live) * k
		st.Rows, next.Rows, mem.Rows = n, n, n
		width := v // logits per row
		if words != nil {
			width = len(words.ids)
			d.advance(st, prev[:n], mem, buf, weights[:n*srcLen])
			words.output(n, buf.outIn, logits[:n*width], 0, width)
		} else {
			d.Step(st, prev[:n], mem, buf, logits[:n*v], weights[:n*srcLen])
		}
		keptBlocks := 0
		for j, s := range live {
			// The 2k best extensions of the block's live hypotheses, best first (ties: lower row, then lower word).
			cands = cands[:0]
			for b := 0; b < k; b++ {
				row := j*k + b
				if math.IsInf(score[row], -1) {
					continue
				}
				if words == nil {
					cands = pushRow(cands, logits[row*v:(row+1)*v], expBuf, score[row], row, nil, 2*k)
					continue
				}
				ids := short.Candidates[s]
				own := rowLogits[:len(ids)]
				for i, id := range ids {
					own[i] = logits[row*width+int(words.pos[id])]
				}
				cands = pushRow(cands, own, expBuf, score[row], row, ids, 2*k)
			}
			attnRow := func(row int) []float32 {
				att := make([]float32, lengths[s])
				for i := range att {
					att[i] = float32(weights[row*srcLen+i])
				}
				return att
			}
			last := t+1 >= opts.limit(lengths[s])
			base := keptBlocks * k
			kept := 0
			for rank, c := range cands {
				if c.token == eos {
					if rank < k {
						nodes = append(nodes, beamNode{parent: node[c.row], token: eos, attn: attnRow(c.row)})
						finished[s] = append(finished[s], d.finish(nodes, len(nodes)-1, c.logProb, true, opts))
					}
					continue
				}
				if kept == k {
					continue
				}
				nodes = append(nodes, beamNode{parent: node[c.row], token: c.token, attn: attnRow(c.row)})
				if last {
					finished[s] = append(finished[s], d.finish(nodes, len(nodes)-1, c.logProb, false, opts))
				}
				from[base+kept], nextTok[base+kept], nextScore[base+kept], nextNode[base+kept] = c.row, c.token, c.logProb, len(nodes)-1
				kept++
			}
			if last || len(finished[s]) >= k {
				continue // the sentence is done: its block leaves the batch
			}
			for ; kept < k; kept++ { // fewer live extensions than beams: pad with unused rows
				from[base+kept], nextTok[base+kept], nextScore[base+kept], nextNode[base+kept] = j*k, eos, math.Inf(-1), -1
			}
			live[keptBlocks] = s
			keptFrom[keptBlocks] = j
			keptBlocks++
		}
		// New row r continues old row from[r]: gather the states into next, then move the kept blocks' memory to
		// the front. Memory rows are the same for all the beams of a sentence, so only whole blocks move.
		live = live[:keptBlocks]
		n = keptBlocks * k
		for r, f := range from[:n] {
			next.CopyRow(r, st, f)
		}
		st, next = next, st
		for to, j := range keptFrom[:keptBlocks] {
			if to != j {
				for b := 0; b < k; b++ {
					mem.CopyRow(to*k+b, mem, j*k+b)
				}
			}
		}
		copy(prev, nextTok[:n])
		copy(score, nextScore[:n])
		copy(node, nextNode[:n])
	}
	out := make([][]Scored, sents)
	for s, hyps := range finished {
		slices.SortStableFunc(hyps, func(a, b Scored) int {
			switch {
			case a.Score > b.Score:
				return -1
			case a.Score < b.Score:
				return 1
			}
			return 0
		})
		out[s] = hyps[:min(nBest, len(hyps))]
	}
	return out, nil
}

// finish reads the hypothesis ending at nodes[last] and scores it.
func (d *Decoder[T]) finish(nodes []beamNode, last int, logProb float64, done bool, opts BeamOptions) Scored {
	var h Hypothesis
	for i := last; i >= 0; i = nodes[i].parent {
		h.Attention = append(h.Attention, nodes[i].attn)
		if !(done && i == last) {
			h.Tokens = append(h.Tokens, nodes[i].token)
		}
	}
	slices.Reverse(h.Attention)
	slices.Reverse(h.Tokens)
	h.Finished = done
	length := len(h.Tokens)
	if done {
		length++
	}
	return Scored{Hypothesis: h, LogProb: logProb,
		Score: logProb/LengthPenalty(length, opts.Alpha) + CoveragePenalty(h.Attention, opts.Beta)}
}

// pushCandidate inserts c into best, kept sorted by decreasing log-probability and at most size long; a
// candidate equal to one already there goes after it, so earlier (lower row, lower word) wins ties.
func pushCandidate(best []candidate, c candidate, size int) []candidate {
	if len(best) == size && c.logProb <= best[size-1].logProb {
		return best
	}
	if math.IsInf(c.logProb, -1) || math.IsNaN(c.logProb) {
		return best
	}
	i := len(best)
	for i > 0 && best[i-1].logProb < c.logProb {
		i--
	}
	if len(best) < size {
		best = append(best, candidate{})
	}
	copy(best[i+1:], best[i:len(best)-1])
	best[i] = c
	return best
}

// pushRow pushes into best (at most size long, see pushCandidate) the extensions of one row's hypothesis, whose
// log-probability is base, by each word: logits are the row's logits, of word tokens[i] (nil: of word i), and a
// word's log-probability is its logit minus their log-sum-exp. scratch is as long as logits, for the exps.
func pushRow[T kernels.Float](best []candidate, logits, scratch []T, base float64, row int, tokens []int, size int) []candidate {
	lse := kernels.LogSumExp(logits, scratch)
	for i, x := range logits {
		logProb := base + (float64(x) - lse)
		if len(best) == size && logProb <= best[size-1].logProb {
			continue // most words: the test pushCandidate starts with, without the call
		}
		token := i
		if tokens != nil {
			token = tokens[i]
		}
		best = pushCandidate(best, candidate{logProb: logProb, row: row, token: token}, size)
	}
	return best
}

// repeatRows returns enc with each row repeated k times in a row.
func repeatRows[T kernels.Float](enc *encoder.Output[T], k int) *encoder.Output[T] {
	if k == 1 {
		return &encoder.Output[T]{Rows: enc.Rows, SrcLen: enc.SrcLen, Hidden: enc.Hidden,
			Memory: slices.Clone(enc.Memory), FinalH: enc.FinalH, FinalC: enc.FinalC}
	}
	mw, fw := enc.SrcLen*2*enc.Hidden, 2*enc.Hidden
	out := &encoder.Output[T]{Rows: enc.Rows * k, SrcLen: enc.SrcLen, Hidden: enc.Hidden,
		Memory: make([]T, enc.Rows*k*mw), FinalH: make([]T, enc.Rows*k*fw), FinalC: make([]T, enc.Rows*k*fw)}
	for r := 0; r < enc.Rows*k; r++ {
		s := r / k
		copy(out.Memory[r*mw:(r+1)*mw], enc.Memory[s*mw:(s+1)*mw])
		copy(out.FinalH[r*fw:(r+1)*fw], enc.FinalH[s*fw:(s+1)*fw])
		copy(out.FinalC[r*fw:(r+1)*fw], enc.FinalC[s*fw:(s+1)*fw])
	}
	return out
}
