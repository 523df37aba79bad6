package transformer

import (
	"fmt"

	"github.com/attend-nmt/attend/block"
	"github.com/attend-nmt/attend/kernels"
)

// encMasks is the encoder's dropout masks, each time-major (S, B, D) with values 0 or 1/(1−p); a nil mask (or
// a missing one) means no dropout there.
type encMasks[T kernels.Float] struct {
	emb      []T   // on the embeddings' sum
	self, ff [][]T // per block: on the self-attention's and on the feed-forward layer's output
}

// at is the masks of block l's sub-layers.
func (m encMasks[T]) at(l int) [][]T { return [][]T{maskAt(m.self, l), maskAt(m.ff, l)} }

// maskAt is masks[l], or nil past its end.
func maskAt[T kernels.Float](masks [][]T, l int) []T {
	if l < len(masks) {
		return masks[l]
	}
	return nil
}

// encPass is one run of the encoder's forward pass: its inputs and every block's cache, in arena memory that
// the next pass under the same name overwrites.
type encPass[T kernels.Float] struct {
	rows, srcLen, dim int
	src, lengths      []int
	masks             encMasks[T]
	emb               embedding[T]
	blocks            []*block.BlockCache[T]
	final             block.Norm[T] // final.H is the memory, padded rows set to 0
	arena             *kernels.Arena[T]
	name              string
}

// encodeForward runs the encoder over src (time-major S×B) and writes its output into mem (B·S, D), the rows of
// padded positions 0. Buffers come from a under names starting with name; src, lengths and the masks must stay
// unchanged until the pass's backward has run.
func (m *Model[T]) encodeForward(w stackWeights[T], src, lengths []int, rows, srcLen int, masks encMasks[T], mem []T, a *kernels.Arena[T], name string) *encPass[T] {
	d, n := m.Cfg.Dim, rows*srcLen
	if len(src) != n || len(lengths) != rows || len(mem) != n*d {
		panic(fmt.Sprintf("transformer: encoder over %d ids, %d lengths, memory %d for %d×%d×%d", len(src), len(lengths), len(mem), rows, srcLen, d))
	}
	p := &encPass[T]{rows: rows, srcLen: srcLen, dim: d, src: src, lengths: lengths, masks: masks,
		emb: embedding[T]{table: w.emb, pos: w.pos, dim: d}, arena: a, name: name}
	// x = (√D · E_src[w] + P) ⊙ mask
	x := a.Get(name+".x", n*d)
	sinusoid := a.Get(name+".sinusoid", srcLen*d)
	p.emb.sinusoids(sinusoid, srcLen)
	p.emb.forward(x, src, rows, srcLen, masks.emb, sinusoid)
	for l := range m.Enc {
		// x += Drop(SelfAttn(LN1(x)));  x += Drop(FFN(LN2(x)))
		c := block.NewBlockCache(a, fmt.Sprintf("%s.%d", name, l), m.block(false), rows, srcLen, 0, lengths, nil)
		x = c.Forward(w.blocks[l], x, nil, masks.at(l), false)
		p.blocks = append(p.blocks, c)
	}
	// mem = LN(x), padded rows 0
	p.final = block.Norm[T]{H: mem, Mean: a.Get(name+".ln.mean", n), Rstd: a.Get(name+".ln.rstd", n)}
	p.final.Forward(w.norm, x, n, d)
	clearPadded(mem, lengths, rows, srcLen, d)
	return p
}

// clearPadded zeroes the rows of x (B·L, width) batch-major at positions at or past their row's length.
func clearPadded[T kernels.Float](x []T, lengths []int, rows, steps, width int) {
	for r := 0; r < rows; r++ {
		from := max(0, min(lengths[r], steps))
		clear(x[(r*steps+from)*width : (r+1)*steps*width])
	}
}

// Encode runs the encoder over a batch without dropout: src time-major (S×B, data.Batch.Src), lengths (B).
func (m *Model[T]) Encode(src []int, lengths []int, rows, srcLen int) *Memory[T] {
	mem := &Memory[T]{Rows: rows, SrcLen: srcLen, Lengths: append([]int(nil), lengths...), States: make([]T, rows*srcLen*m.Cfg.Dim)}
	m.encodeForward(m.weightsOf(false, dataOf(m.encoderTensors())), src, mem.Lengths, rows, srcLen, encMasks[T]{}, mem.States, kernels.NewArena[T](), "enc")
	return mem
}
