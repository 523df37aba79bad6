package transformer

import (
	"fmt"

	"github.com/attend-nmt/attend/block"
	"github.com/attend-nmt/attend/kernels"
	"github.com/attend-nmt/attend/param"
)

// A stack's dropout masks (encodeForward, decodeForward) are one list in the order of maskNodes: the
// embeddings' sum's, then each block's sub-layers' outputs' (the encoder's self-attention and feed-forward layer,
// the decoder's self-attention, cross-attention and feed-forward layer), each time-major (L, B, D) with values 0
// or 1/(1−p). A nil mask, or a list too short to hold it (nil: no dropout at all), means no dropout there.

// blockMasks is the masks of block l's sub sub-layers in masks, nil (none) when the list does not hold them.
func blockMasks[T kernels.Float](masks [][]T, l, sub int) [][]T {
	if len(masks) < 1+(l+1)*sub {
		return nil
	}
	return masks[1+l*sub : 1+(l+1)*sub]
}

// pass is one run of the encoder's or the decoder's forward pass: its inputs and every block's cache, in arena
// memory that the next pass under the same name overwrites.
type pass[T kernels.Float] struct {
	rows, steps, dim int
	ids, lengths     []int // lengths: the encoder's real lengths (its outputs past them are 0); nil for the decoder
	masks            [][]T // the dropout masks (see blockMasks)
	sub              int   // each block's sub-layers
	emb              embedding[T]
	blocks           []*block.BlockCache[T]
	final            block.Norm[T] // final.H is the output
	arena            *kernels.Arena[T]
	name             string
}

// embMask is the mask on the embeddings' sum, or nil.
func (p *pass[T]) embMask() []T {
	if len(p.masks) == 0 {
		return nil
	}
	return p.masks[0]
}

// encodeForward runs the encoder over src (time-major S×B) and writes its output into mem (B·S, D), the rows of
// padded positions 0. Buffers come from a under names starting with name; src, lengths and the masks must stay
// unchanged until the pass's backward has run.
func (m *Model[T]) encodeForward(w stackWeights[T], src, lengths []int, rows, srcLen int, masks [][]T, mem []T, a *kernels.Arena[T], name string) *pass[T] {
	d, n := m.Cfg.Dim, rows*srcLen
	if len(src) != n || len(lengths) != rows || len(mem) != n*d {
		panic(fmt.Sprintf("transformer: encoder over %d ids, %d lengths, memory %d for %d×%d×%d", len(src), len(lengths), len(mem), rows, srcLen, d))
	}
	// x += Drop(SelfAttn(LN1(x)));  x += Drop(FFN(LN2(x)))
	return m.stackForward(false, w, src, lengths, rows, srcLen, nil, nil, 0, masks, mem, a, name)
}

// stackForward runs the encoder's stack, or with decoder the decoder's over the memory mem (B·memSteps, D) whose
// rows have memLengths real positions: x = (√D · E[w] + P) ⊙ mask over the ids (time-major L×B), then the
// blocks, then out = LN(x) (B·L, D), the rows of the encoder's padded positions (lengths) 0.
func (m *Model[T]) stackForward(decoder bool, w stackWeights[T], ids, lengths []int, rows, steps int, mem []T, memLengths []int, memSteps int,
	masks [][]T, out []T, a *kernels.Arena[T], name string) *pass[T] {
	d, n := m.Cfg.Dim, rows*steps
	p := &pass[T]{rows: rows, steps: steps, dim: d, ids: ids, lengths: lengths, masks: masks, sub: 2,
		emb: embedding[T]{table: w.emb, pos: w.pos, dim: d}, arena: a, name: name}
	x := a.Get(name+".x", n*d)
	sinusoid := a.Get(name+".sinusoid", steps*d)
	p.emb.sinusoids(sinusoid, steps)
	if decoder {
		p.sub = 3
	}
	p.emb.forward(x, ids, rows, steps, p.embMask(), sinusoid)
	for l, bw := range w.blocks {
		c := block.NewBlockCache(a, fmt.Sprintf("%s.%d", name, l), m.block(decoder), rows, steps, memSteps, lengths, memLengths)
		x = c.Forward(bw, x, mem, blockMasks(masks, l, p.sub), false)
		p.blocks = append(p.blocks, c)
	}
	p.final = block.Norm[T]{H: out, Mean: a.Get(name+".ln.mean", n), Rstd: a.Get(name+".ln.rstd", n)}
	p.final.Forward(w.norm, x, n, d)
	if lengths != nil {
		block.ClearPadded(out, lengths, rows, steps, d)
	}
	return p
}

// Encode runs the encoder over a batch without dropout: src time-major (S×B, data.Batch.Src), lengths (B).
func (m *Model[T]) Encode(src []int, lengths []int, rows, srcLen int) *Memory[T] {
	mem := &Memory[T]{Rows: rows, SrcLen: srcLen, Lengths: append([]int(nil), lengths...), States: make([]T, rows*srcLen*m.Cfg.Dim)}
	m.encodeForward(m.weightsOf(false, param.Data(m.encoderTensors())), src, mem.Lengths, rows, srcLen, nil, mem.States, kernels.NewArena[T](), "enc")
	return mem
}
