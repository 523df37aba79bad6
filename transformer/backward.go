package transformer

import "github.com/attend-nmt/attend/block"

// backward adds into dw the gradients of the stack's weights, and with the decoder's writes into dMem (B·S, D)
// the gradient of the memory, given dOut (B·L, D), the gradient of the pass's output final.H (the encoder's rows
// at padded positions are ignored: those outputs are constant 0). One running buffer dX holds the residual
// stream's gradient from the top down to the embeddings, through each block's backward pass. dw.emb and dw.pos
// are dense.
func (p *pass[T]) backward(w, dw stackWeights[T], dOut, dMem []T) {
	rows, steps, d := p.rows, p.steps, p.dim
	n, a := rows*steps, p.arena
	s := block.NewBlockScratch(a, p.name, p.blocks[0])
	dX := a.Get(p.name+".dx", n*d)
	if p.lengths != nil {
		// forward: the encoder's out = LN(x) with padded rows 0, so those rows pass no gradient
		dm := a.Get(p.name+".dmem", n*d)
		copy(dm, dOut)
		block.ClearPadded(dm, p.lengths, rows, steps, d)
		dOut = dm
	}
	clear(dMem)
	// forward: out = LN(x)
	clear(dX)
	p.final.Backward(w.norm, dw.norm, dOut, dX, a.Get(p.name+".dtmp", n*d), n, d)
	for l := len(p.blocks) - 1; l >= 0; l-- {
		// the memory's gradient adds up over the blocks
		p.blocks[l].Backward(w.blocks[l], dw.blocks[l], dX, dMem, blockMasks(p.masks, l, p.sub), s)
	}
	// forward: x = (√D · E[w] + P) ⊙ mask
	p.emb.backward(dw.emb, dw.pos, dX, p.ids, rows, steps, p.embMask())
}
