package transformer

import (
	"github.com/attend-nmt/attend/block"
	"github.com/attend-nmt/attend/kernels"
)

// The backward passes of the encoder and decoder stacks. A sub-layer x' = x + Drop(f(LN(x))) passes the
// residual stream's gradient dx' on unchanged to x and adds LN's backward of f's backward of dx' ⊙ mask, so one
// running buffer dX holds the stream's gradient from the top block down to the embeddings.

// stackScratch is the scratch shared by the sub-layers' backward passes of one stack; the attentions of all
// blocks share one scratch of their own too (block.NewScratch under one name), since the blocks' backward passes
// run one after the other.
type stackScratch[T kernels.Float] struct {
	dX, dY, dH, tmp, dAct []T
}

func newStackScratch[T kernels.Float](a *kernels.Arena[T], name string, n, d, f int) stackScratch[T] {
	return stackScratch[T]{dX: a.Get(name+".dx", n*d), dY: a.Get(name+".dy", n*d), dH: a.Get(name+".dh", n*d),
		tmp: a.Get(name+".dtmp", n*d), dAct: a.Get(name+".dact", n*f)}
}

// backward adds into dw the gradients of the encoder's weights given dMem (B·S, D), the gradient of its output
// (its rows at padded positions are ignored: those outputs are constant 0). dw.emb and dw.pos are dense.
func (p *encPass[T]) backward(w, dw encWeights[T], dMem []T) {
	rows, steps, d := p.rows, p.srcLen, p.dim
	n, a := rows*steps, p.arena
	s := newStackScratch(a, p.name, n, d, len(p.blocks[0].ff.Act)/n)
	// forward: mem = LN(x) with padded rows 0, so those rows pass no gradient
	dm := a.Get(p.name+".dmem", n*d)
	copy(dm, dMem)
	clearPadded(dm, p.lengths, rows, steps, d)
	clear(s.dX)
	p.final.backward(w.norm, dw.norm, dm, s.dX, s.tmp, n, d)
	for l := len(p.blocks) - 1; l >= 0; l-- {
		c, bw, bd := &p.blocks[l], w.blocks[l], dw.blocks[l]
		// forward: x2 = x1 + Drop(FFN(LN2(x1)))
		g := dropped(s.dX, maskAt(p.masks.ff, l), s.dY, rows, steps, d)
		clear(s.dH)
		c.ff.Backward(bw.ff, bd.ff, g, s.dH, s.dAct)
		c.ln2.backward(bw.norm2, bd.norm2, s.dH, s.dX, s.tmp, n, d)
		// forward: x1 = x + Drop(SelfAttn(LN1(x)))
		g = dropped(s.dX, maskAt(p.masks.self, l), s.dY, rows, steps, d)
		clear(s.dH)
		c.self.Backward(bw.self, bd.self, g, s.dH, s.dH, block.NewScratch(a, p.name+".self.grad", c.self))
		c.ln1.backward(bw.norm1, bd.norm1, s.dH, s.dX, s.tmp, n, d)
	}
	// forward: x = (√D · E[w] + P) ⊙ mask
	p.emb.backward(dw.emb, dw.pos, s.dX, p.src, rows, steps, p.masks.emb)
}

// backward adds into dw the gradients of the decoder's weights and writes into dMem (B·S, D) the gradient of the
// memory, given dOut (B·T, D), the gradient of the pass's output final.h. dw.emb and dw.pos are dense.
func (p *decPass[T]) backward(w, dw decWeights[T], dOut, dMem []T) {
	rows, steps, d := p.rows, p.tgtLen, p.dim
	n, a := rows*steps, p.arena
	s := newStackScratch(a, p.name, n, d, len(p.blocks[0].ff.Act)/n)
	clear(dMem)
	// forward: out = LN(y)
	clear(s.dX)
	p.final.backward(w.norm, dw.norm, dOut, s.dX, s.tmp, n, d)
	for l := len(p.blocks) - 1; l >= 0; l-- {
		c, bw, bd := &p.blocks[l], w.blocks[l], dw.blocks[l]
		// forward: y3 = y2 + Drop(FFN(LN3(y2)))
		g := dropped(s.dX, maskAt(p.masks.ff, l), s.dY, rows, steps, d)
		clear(s.dH)
		c.ff.Backward(bw.ff, bd.ff, g, s.dH, s.dAct)
		c.ln3.backward(bw.norm3, bd.norm3, s.dH, s.dX, s.tmp, n, d)
		// forward: y2 = y1 + Drop(CrossAttn(LN2(y1), mem)); the memory's gradient adds up over the blocks
		g = dropped(s.dX, maskAt(p.masks.cross, l), s.dY, rows, steps, d)
		clear(s.dH)
		c.cross.Backward(bw.cross, bd.cross, g, s.dH, dMem, block.NewScratch(a, p.name+".cross.grad", c.cross))
		c.ln2.backward(bw.norm2, bd.norm2, s.dH, s.dX, s.tmp, n, d)
		// forward: y1 = y + Drop(CausalSelfAttn(LN1(y)))
		g = dropped(s.dX, maskAt(p.masks.self, l), s.dY, rows, steps, d)
		clear(s.dH)
		c.self.Backward(bw.self, bd.self, g, s.dH, s.dH, block.NewScratch(a, p.name+".self.grad", c.self))
		c.ln1.backward(bw.norm1, bd.norm1, s.dH, s.dX, s.tmp, n, d)
	}
	// forward: y = (√D · E[w] + P) ⊙ mask
	p.emb.backward(dw.emb, dw.pos, s.dX, p.tgtIn, rows, steps, p.masks.emb)
}
