package transformer

import "github.com/attend-nmt/attend/block"

// The backward passes of the encoder and decoder stacks: one running buffer dX holds the residual stream's
// gradient from the top down to the embeddings, through each block's backward pass (block.BlockCache.Backward).

// backward adds into dw the gradients of the encoder's weights given dMem (B·S, D), the gradient of its output
// (its rows at padded positions are ignored: those outputs are constant 0). dw.emb and dw.pos are dense.
func (p *encPass[T]) backward(w, dw stackWeights[T], dMem []T) {
	rows, steps, d := p.rows, p.srcLen, p.dim
	n, a := rows*steps, p.arena
	s := block.NewBlockScratch(a, p.name, p.blocks[0])
	dX := a.Get(p.name+".dx", n*d)
	// forward: mem = LN(x) with padded rows 0, so those rows pass no gradient
	dm := a.Get(p.name+".dmem", n*d)
	copy(dm, dMem)
	clearPadded(dm, p.lengths, rows, steps, d)
	clear(dX)
	p.final.Backward(w.norm, dw.norm, dm, dX, a.Get(p.name+".dtmp", n*d), n, d)
	for l := len(p.blocks) - 1; l >= 0; l-- {
		p.blocks[l].Backward(w.blocks[l], dw.blocks[l], dX, nil, p.masks.at(l), s)
	}
	// forward: x = (√D · E[w] + P) ⊙ mask
	p.emb.backward(dw.emb, dw.pos, dX, p.src, rows, steps, p.masks.emb)
}

// backward adds into dw the gradients of the decoder's weights and writes into dMem (B·S, D) the gradient of the
// memory, given dOut (B·T, D), the gradient of the pass's output final.H. dw.emb and dw.pos are dense.
func (p *decPass[T]) backward(w, dw stackWeights[T], dOut, dMem []T) {
	rows, steps, d := p.rows, p.tgtLen, p.dim
	n, a := rows*steps, p.arena
	s := block.NewBlockScratch(a, p.name, p.blocks[0])
	dX := a.Get(p.name+".dx", n*d)
	clear(dMem)
	// forward: out = LN(y)
	clear(dX)
	p.final.Backward(w.norm, dw.norm, dOut, dX, a.Get(p.name+".dtmp", n*d), n, d)
	for l := len(p.blocks) - 1; l >= 0; l-- {
		// the memory's gradient adds up over the blocks
		p.blocks[l].Backward(w.blocks[l], dw.blocks[l], dX, dMem, p.masks.at(l), s)
	}
	// forward: y = (√D · E[w] + P) ⊙ mask
	p.emb.backward(dw.emb, dw.pos, dX, p.tgtIn, rows, steps, p.masks.emb)
}
