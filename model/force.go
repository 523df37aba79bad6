package model

import (
	"github.com/attend-nmt/attend/data"
	"github.com/attend-nmt/attend/encoder"
	"github.com/attend-nmt/attend/kernels"
)

// Forced is one given target scored by teacher forcing: at every step the decoder is fed the given previous
// word, not its own choice.
type Forced struct {
	// Attention has one row per target word and a last row for </s>; row t holds the weights of the real
	// source words when target word t (or </s>) was predicted.
	Attention [][]float32
	// LogProbs[t] is log p(y_t | y_<t, source) of target word t, and the last entry that of </s>.
	LogProbs []float64
	// Heads, for attention with several heads (multi-head), holds each head's weights like Attention:
	// Heads[j][t][i]. Attention is their average (a Transformer's with model.alignment_head: that head's). Nil
	// for single-head attention.
	Heads [][][]float32
	// Alignment, for a model with full-context alignment (model.full_context_alignment), holds the alignment
	// attention's weights like Attention: row t those of the source words when target word t (or </s>) is known.
	// Nil without.
	Alignment [][]float32
	// SelfAttention, for a model with self-attention encoder layers, holds each block's heads' weights among the
	// source words: SelfAttention[l][j][i][k] is the weight of word k for word i in head j of block l. Nil
	// without those layers.
	SelfAttention [][][][]float32
}

// Force scores the targets of a batch (data.Batch.TgtIn and TgtOut) with teacher forcing, without dropout,
// through the plain-Go forward pass, and returns the real rows' attention and per-word log-probabilities. Fed
// its own greedy output, it reproduces greedy search's attention; the log-probabilities sum, over the batch,
// to minus the validation loss (Loss) when no target word is <pad>. It panics if the batch has no targets.
func (m *Seq2Seq[T]) Force(b *data.Batch) []Forced {
	if b.TgtOut == nil {
		panic("model: Force of a batch without targets")
	}
	return m.net.force(b, m.TgtVocab.Size())
}

// addSelfAttention copies out of cache the self-attention weights of each row r of out, whose real words are
// the first lengths[r] of a padded row of srcLen, as [block][head][word i][word k].
func addSelfAttention[T kernels.Float](out []Forced, cache *encoder.SelfAttentionCache[T], heads int, lengths []int, srcLen int) {
	for r := range out {
		out[r].SelfAttention = make([][][][]float32, cache.Blocks())
	}
	for l := 0; l < cache.Blocks(); l++ {
		for j := 0; j < heads; j++ {
			w := cache.Weights(l, j) // (rows, srcLen, srcLen)
			for r := range out {
				n := lengths[r]
				rows := make([][]float32, n)
				for i := range rows {
					rows[i] = make([]float32, n)
					for k := range rows[i] {
						rows[i][k] = float32(w[(r*srcLen+i)*srcLen+k])
					}
				}
				out[r].SelfAttention[l] = append(out[r].SelfAttention[l], rows)
			}
		}
	}
}

// forcedSteps appends to out[r].LogProbs, for each row r of out and each target position t of the batch up to
// and including its </s>, the log-probability of its word under logits ((TgtLen, Rows, v), time-major), and
// calls at(r, t·Rows+r) there for the rest of the position's figures.
func forcedSteps[T kernels.Float](out []Forced, b *data.Batch, logits []T, v int, at func(r, step int)) {
	rows := b.Rows
	for r := range out {
		for t := 0; t < b.TgtLen; t++ {
			// The target ends at its </s>, not at the first PadID: an untrained model's words may be <pad>.
			if t > 0 && b.TgtOut[(t-1)*rows+r] == data.EOSID {
				break
			}
			step := t*rows + r
			row := logits[step*v : (step+1)*v]
			out[r].LogProbs = append(out[r].LogProbs, float64(row[b.TgtOut[step]])-logSumExp(row))
			at(r, step)
		}
	}
}

// float32Row returns x[off : off+n] as float32.
func float32Row[T kernels.Float](x []T, off, n int) []float32 {
	row := make([]float32, n)
	for i, w := range x[off : off+n] {
		row[i] = float32(w)
	}
	return row
}
