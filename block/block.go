package block

import (
	"fmt"

	"github.com/attend-nmt/attend/kernels"
)

// Block is the shape of one Transformer block: self-attention, attention over a memory when Cross, and a
// feed-forward layer of FF inner units, each a sub-layer f joined to the residual stream x, pre-norm (as
// OpenNMT-py's and fairseq's Transformers) or, with PostNorm, post-norm (as Vaswani et al. 2017):
//
//	pre-norm:   x += Drop(f(LN(x)))
//	post-norm:  x = LN(x + Drop(f(x)))
//
// Drop multiplies by a dropout mask, time-major (L, B, D) as the trainer draws it; a nil mask is none.
type Block struct {
	Attention               // the shape of the self-attention, and of the cross-attention
	FF                      int
	Cross, PostNorm, Causal bool // Causal: the self-attention sees only the positions up to its own
}

// sublayers is the number of sub-layers: 2, or 3 with Cross.
func (b Block) sublayers() int {
	if b.Cross {
		return 3
	}
	return 2
}

// NormWeights is one layer norm's gain and bias (or their gradients), (D) each.
type NormWeights[T kernels.Float] struct{ Gain, Bias []T }

// BlockWeights is one block's weights (or their gradients): Norms[k] is the layer norm of sub-layer k
// (self-attention, then the cross-attention with Block.Cross, then the feed-forward layer); Cross is unread
// without Block.Cross.
type BlockWeights[T kernels.Float] struct {
	Norms       []NormWeights[T]
	Self, Cross Weights[T]
	FF          FFWeights[T]
}

// Norm is one layer norm, H = LayerNorm(X), with the statistics the backward pass reads.
type Norm[T kernels.Float] struct {
	X, H       []T // (N, D); X is not a copy
	Mean, Rstd []T // (N)
}

// NewNorm takes a layer norm's buffers for n rows of width d from arena under names starting with name.
func NewNorm[T kernels.Float](arena *kernels.Arena[T], name string, n, d int) Norm[T] {
	return Norm[T]{H: arena.Get(name+".h", n*d), Mean: arena.Get(name+".mean", n), Rstd: arena.Get(name+".rstd", n)}
}

// Forward sets X = x and H = LayerNorm(x) over n rows of width d.
func (c *Norm[T]) Forward(w NormWeights[T], x []T, n, d int) {
	c.X = x
	kernels.LayerNorm(c.H, c.Mean, c.Rstd, x, w.Gain, w.Bias, n, d)
}

// Backward adds the gradient of X into dx, and those of the gain and bias into dw, given dh; tmp is (N, D)
// scratch.
func (c *Norm[T]) Backward(w, dw NormWeights[T], dh, dx, tmp []T, n, d int) {
	// forward: h = (x − mean)·rstd ⊙ gain + bias
	kernels.LayerNormBackward(tmp, dw.Gain, dw.Bias, dh, c.X, c.Mean, c.Rstd, w.Gain, n, d)
	for i, g := range tmp[:n*d] {
		dx[i] += g
	}
}

// BlockCache is one block over Rows × Steps positions and what its forward pass keeps: the sub-layers' caches,
// each norm's input and output, and the residual stream after each sub-layer.
type BlockCache[T kernels.Float] struct {
	Block
	Rows, Steps int
	Self, Cross *Cache[T]
	FF          *FeedForward[T]
	norms       []Norm[T]
	streams     [][]T // the residual stream after each sub-layer (pre-norm), or its sum before the norm (post-norm)
	y           []T   // a sub-layer's output before dropout, read within Forward only: the blocks share it
}

// NewBlockCache takes a block's buffers from arena under names starting with name, for rows × steps positions
// attending over rows × memLen positions of memory (unread without Cross): each row has keyLen[r] real
// positions of its own (self-attention; nil: all steps, and Causal then limits query i to the keys up to i),
// and memLen[r] real positions of memory (cross-attention).
func NewBlockCache[T kernels.Float](arena *kernels.Arena[T], name string, b Block, rows, steps, memSteps int, keyLen, memLen []int) *BlockCache[T] {
	n, d := rows*steps, b.OutDim
	c := &BlockCache[T]{Block: b, Rows: rows, Steps: steps,
		Self: NewCache(arena, name+".self", b.Attention, rows, steps, steps, keyLen, keyLen, b.Causal),
		FF:   NewFeedForward(arena, name+".act", n, d, b.FF), y: arena.Get("block.y", n*d)}
	if b.Cross {
		c.Cross = NewCache(arena, name+".cross", b.Attention, rows, steps, memSteps, memLen, nil, false)
	}
	for k := 0; k < b.sublayers(); k++ {
		c.norms = append(c.norms, NewNorm(arena, fmt.Sprintf("%s.ln%d", name, k+1), n, d))
		c.streams = append(c.streams, arena.Get(fmt.Sprintf("%s.x%d", name, k+1), n*d))
	}
	return c
}

// SetStep makes c the cache of one step of search over rows rows (Steps 1), in the caller's buffers: the
// attentions' caches, which the caller sets up over their cached keys and values, the feed-forward layer's,
// and a layer norm's output and statistics h, mean and rstd, which the sub-layers share.
func (c *BlockCache[T]) SetStep(b Block, rows int, self, cross *Cache[T], ff *FeedForward[T], h, mean, rstd []T) {
	*c = BlockCache[T]{Block: b, Rows: rows, Steps: 1, Self: self, Cross: cross, FF: ff, norms: c.norms[:0]}
	for k := 0; k < b.sublayers(); k++ {
		c.norms = append(c.norms, Norm[T]{H: h, Mean: mean, Rstd: rstd})
	}
}

// sublayer runs sub-layer k of the block: f(h) into out (accumulate: added to out).
func (c *BlockCache[T]) sublayer(k int, w BlockWeights[T], h, mem, out []T, accumulate bool) {
	switch {
	case k == 0:
		c.Self.Forward(w.Self, h, h, out, accumulate)
	case k == 1 && c.Block.Cross:
		c.Cross.Forward(w.Cross, h, mem, out, accumulate)
	default:
		c.FF.Forward(w.FF, h, out, accumulate)
	}
}

// Forward runs the block on x (Rows·Steps, D) batch-major over the memory mem (Rows·memSteps, D; nil when the
// cross-attention's keys and values are cached already) and returns its output, in the cache's buffers;
// masks[k] is sub-layer k's dropout mask (nil, or a missing one: none). With inPlace (pre-norm only: a step of
// search, which keeps nothing for a backward pass) every sub-layer adds its output straight into x, which it
// returns.
func (c *BlockCache[T]) Forward(w BlockWeights[T], x, mem []T, masks [][]T, inPlace bool) []T {
	n, d := c.Rows*c.Steps, c.OutDim
	for k := range c.norms {
		mask := maskAt(masks, k)
		nc := &c.norms[k]
		switch {
		case c.PostNorm:
			// x = LN(x + Drop(f(x)))
			res := c.streams[k]
			copy(res, x)
			if mask == nil {
				c.sublayer(k, w, x, mem, res, true)
			} else {
				c.sublayer(k, w, x, mem, c.y, false)
				addDropped(res, c.y, mask, c.Rows, c.Steps, d)
			}
			nc.Forward(w.Norms[k], res, n, d)
			x = nc.H
		case inPlace:
			// x += f(LN(x))
			nc.Forward(w.Norms[k], x, n, d)
			c.sublayer(k, w, nc.H, mem, x, true)
		default:
			// x += Drop(f(LN(x))), into a new buffer
			nc.Forward(w.Norms[k], x, n, d)
			c.sublayer(k, w, nc.H, mem, c.y, false)
			next := c.streams[k]
			copy(next, x)
			addDropped(next, c.y, mask, c.Rows, c.Steps, d)
			x = next
		}
	}
	return x
}

// BlockScratch is the scratch of blocks' backward passes over the same positions, which run one after the
// other and may share it.
type BlockScratch[T kernels.Float] struct {
	dY, dH, tmp, dAct []T
	self, cross       Scratch[T]
	arena             *kernels.Arena[T]
	name              string
}

// NewBlockScratch takes the scratch of c's backward pass (and of blocks like it) from arena under names
// starting with name.
func NewBlockScratch[T kernels.Float](arena *kernels.Arena[T], name string, c *BlockCache[T]) *BlockScratch[T] {
	n, d := c.Rows*c.Steps, c.OutDim
	s := &BlockScratch[T]{dY: arena.Get(name+".dy", n*d), dH: arena.Get(name+".dh", n*d), tmp: arena.Get(name+".dtmp", n*d),
		dAct: arena.Get(name+".dact", n*c.Block.FF), self: NewScratch(arena, name+".self.grad", c.Self), arena: arena, name: name}
	if c.Cross != nil {
		s.cross = NewScratch(arena, name+".cross.grad", c.Cross)
	}
	return s
}

// subBackward runs sub-layer k's backward pass: given g, the gradient of its output, it adds the weights'
// gradients into dw and that of its input into dh (and of the memory into dMem).
func (c *BlockCache[T]) subBackward(k int, w, dw BlockWeights[T], g, dh, dMem []T, s *BlockScratch[T]) {
	switch {
	case k == 0:
		c.Self.Backward(w.Self, dw.Self, g, dh, dh, s.self)
	case k == 1 && c.Block.Cross:
		c.Cross.Backward(w.Cross, dw.Cross, g, dh, dMem, s.cross)
	default:
		c.FF.Backward(w.FF, dw.FF, g, dh, s.dAct)
	}
}

// Backward adds the gradients of the weights into dw and of the memory into dMem (with Cross), given in dX the
// gradient of Forward's output, which it overwrites with that of Forward's input x.
func (c *BlockCache[T]) Backward(w, dw BlockWeights[T], dX, dMem []T, masks [][]T, s *BlockScratch[T]) {
	n, d := c.Rows*c.Steps, c.OutDim
	for k := len(c.norms) - 1; k >= 0; k-- {
		mask, nc := maskAt(masks, k), &c.norms[k]
		if c.PostNorm {
			// forward: x' = LN(res), res = x + Drop(f(x)), so dx = dres + f's backward of dres ⊙ mask
			copy(s.dH, dX)
			clear(dX)
			nc.Backward(w.Norms[k], dw.Norms[k], s.dH, dX, s.tmp, n, d)
			c.subBackward(k, w, dw, dropped(s.tmp, mask, s.dY, c.Rows, c.Steps, d), dX, dMem, s)
			continue
		}
		// forward: x' = x + Drop(f(LN(x))), so dx = dx' + LN's backward of f's backward of dx' ⊙ mask
		g := dropped(dX, mask, s.dY, c.Rows, c.Steps, d)
		clear(s.dH)
		c.subBackward(k, w, dw, g, s.dH, dMem, s)
		nc.Backward(w.Norms[k], dw.Norms[k], s.dH, dX, s.tmp, n, d)
	}
}

// maskAt is masks[k], or nil past its end.
func maskAt[T kernels.Float](masks [][]T, k int) []T {
	if k < len(masks) {
		return masks[k]
	}
	return nil
}

// addDropped adds y ⊙ mask into x (both (B·L, D) batch-major; mask time-major (L, B, D), nil: no dropout): a
// sub-layer's output joining the residual stream. y is left unchanged.
func addDropped[T kernels.Float](x, y, mask []T, rows, steps, d int) {
	if mask == nil {
		for i, v := range y[:rows*steps*d] {
			x[i] += v
		}
		return
	}
	for r := 0; r < rows; r++ {
		for i := 0; i < steps; i++ {
			xr, yr, mr := x[(r*steps+i)*d:][:d], y[(r*steps+i)*d:][:d], mask[(i*rows+r)*d:][:d]
			for u := range xr {
				xr[u] += yr[u] * mr[u]
			}
		}
	}
}

// dropped returns g ⊙ mask (batch-major g, time-major mask) in out, or g itself when mask is nil: the gradient
// of a sub-layer's output from that of the residual stream after it.
func dropped[T kernels.Float](g, mask, out []T, rows, steps, d int) []T {
	if mask == nil {
		return g
	}
	for r := 0; r < rows; r++ {
		for i := 0; i < steps; i++ {
			gr, or, mr := g[(r*steps+i)*d:][:d], out[(r*steps+i)*d:][:d], mask[(i*rows+r)*d:][:d]
			for u := range gr {
				or[u] = gr[u] * mr[u]
			}
		}
	}
	return out[:rows*steps*d]
}

// ClearPadded zeroes the rows of x (B·L, width) batch-major at positions at or past their row's length: a
// stack's outputs there, or their gradients.
func ClearPadded[T kernels.Float](x []T, lengths []int, rows, steps, width int) {
	for r := 0; r < rows; r++ {
		from := max(0, min(lengths[r], steps))
		clear(x[(r*steps+from)*width : (r+1)*steps*width])
	}
}
