package encoder

// The self-attention layers (model.self_attention_layers): Transformer encoder blocks stacked on the recurrent
// encoder's states. Letters used in this file, as in llm.c: B rows (sentences), S source positions, N = B·S,
// D the memory width (2 × the recurrent encoder's hidden units), NH heads, HD = D/NH the width of one head, F the
// feed-forward layer's inner width (FFNMultiplier × D).
//
// One block, post-norm as in the original Transformer (Vaswani et al. 2017), masked for padding:
//
//	Q_j = x W_Q,j + b_Q,j;  K_j = x W_K,j + b_K,j;  V_j = x W_V,j + b_V,j          (each N × HD)
//	A_j = softmax over real keys (Q_j K_jᵀ / √HD);  C = [A_1 V_1 … A_NH V_NH]     (padded query rows of A_j: 0)
//	y1  = LayerNorm(x + C W_O + b_O)
//	out = LayerNorm(y1 + ReLU(y1 W_1 + b_1) W_2 + b_2),  rows of padded positions set to 0
//
// Each is block's post-norm block, its heads' projections blocks of their own (block.Attention.PerHead): the
// plain-Go pair SelfAttention.Forward / Backward, which inference and the fused training op share, runs
// block.BlockCache; SelfAttention.Graph builds the same blocks from gorgonia's ops (block.GraphBlock) for
// train.unfused=true, the autodiff reference the hand-written backward is tested against.

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/attend-nmt/attend/block"
	"github.com/attend-nmt/attend/graph"
	"github.com/attend-nmt/attend/kernels"
	"github.com/attend-nmt/attend/param"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// FFNMultiplier is the inner width of each block's feed-forward layer as a multiple of the memory width: 2, half
// the original Transformer's 4, because the feed-forward layer is the block's largest cost and the recurrent
// encoder beneath it already gives every position a wide nonlinear summary; at 2× one block costs about as much
// per word as the BiLSTM under it.
const FFNMultiplier = 2

// MaxSelfAttentionLayers is the most blocks model.self_attention_layers may ask for.
const MaxSelfAttentionLayers = 8

// blockTensors is the number of parameter tensors of one block (block.List).
const blockTensors = 16

// CheckSelfAttention reports settings that self-attention layers cannot take: a number of layers outside 0 to
// MaxSelfAttentionLayers, or (with layers) a number of heads that does not divide the memory width.
func CheckSelfAttention(layers, heads, memDim int) error {
	switch {
	case layers < 0 || layers > MaxSelfAttentionLayers:
		return fmt.Errorf("encoder: %d self-attention layers; want 0 to %d", layers, MaxSelfAttentionLayers)
	case layers > 0 && (heads < 1 || memDim%heads != 0):
		return fmt.Errorf("encoder: %d heads do not divide the memory width %d of the self-attention layers", heads, memDim)
	}
	return nil
}

// blockWeights is one block's weights (or their gradients), w in the order of Params.
func (s *SelfAttention[T]) blockWeights(w [][]T) block.BlockWeights[T] {
	bw, _ := block.Read(s.block(), w)
	return bw
}

// block is the shape of every block: post-norm, each head's projections a block of its own.
func (s *SelfAttention[T]) block() block.Block {
	return block.Block{Attention: block.Attention{Heads: s.Heads, HeadDim: s.HeadDim, QueryDim: s.Dim, MemDim: s.Dim, OutDim: s.Dim, PerHead: true},
		FF: s.FFN, PostNorm: true}
}

// SelfAttention is a stack of Transformer blocks over a memory of width Dim. In each, head j's query, key and
// value projections are block j of W_Q, W_K and W_V (NH, D, HD), their biases (D) hold head j at
// [j·HD, (j+1)·HD), and its output projection is the rows [j·HD, (j+1)·HD) of W_O (D, D), so that a head's
// weights are contiguous (the gorgonia graph binds each as one view).
type SelfAttention[T kernels.Float] struct {
	Dim, Heads, HeadDim, FFN int
	Blocks                   []block.BlockTensors[T]
}

// NewSelfAttention registers layers blocks over a memory of width dim in set, named "enc.self.L.*" for block L
// (w_q, b_q, w_k, b_k, w_v, b_v, w_o, b_o, ln1_g, ln1_b, w_ff1, b_ff1, w_ff2, b_ff2, ln2_g, ln2_b). heads must
// divide dim (CheckSelfAttention; model.Config.Validate says so to the user); a mismatch here panics.
func NewSelfAttention[T kernels.Float](set *param.Set[T], layers, dim, heads int) *SelfAttention[T] {
	if heads < 1 || dim%heads != 0 {
		panic(fmt.Sprintf("encoder: %d heads do not divide the memory width %d", heads, dim))
	}
	hd, f := dim/heads, FFNMultiplier*dim
	s := &SelfAttention[T]{Dim: dim, Heads: heads, HeadDim: hd, FFN: f}
	for l := 0; l < layers; l++ {
		name := func(n string) string { return fmt.Sprintf("enc.self.%d.%s", l, n) }
		// registered in the order of Params (block.List's, post-norm)
		self := block.Tensors[T]{QW: set.Add(name("w_q"), heads, dim, hd), QB: set.Add(name("b_q"), dim),
			KW: set.Add(name("w_k"), heads, dim, hd), KB: set.Add(name("b_k"), dim),
			VW: set.Add(name("w_v"), heads, dim, hd), VB: set.Add(name("b_v"), dim),
			OW: set.Add(name("w_o"), dim, dim), OB: set.Add(name("b_o"), dim)}
		norm1 := block.NormTensors[T]{Gain: set.Add(name("ln1_g"), dim), Bias: set.Add(name("ln1_b"), dim)}
		ff := block.FFTensors[T]{W1: set.Add(name("w_ff1"), dim, f), B1: set.Add(name("b_ff1"), f),
			W2: set.Add(name("w_ff2"), f, dim), B2: set.Add(name("b_ff2"), dim)}
		norm2 := block.NormTensors[T]{Gain: set.Add(name("ln2_g"), dim), Bias: set.Add(name("ln2_b"), dim)}
		s.Blocks = append(s.Blocks, block.BlockTensors[T]{Norms: []block.NormTensors[T]{norm1, norm2}, Self: self, FF: ff})
	}
	return s
}

// Params lists every block's tensors, block by block, each in block.List's order (post-norm): w_q, b_q, w_k,
// b_k, w_v, b_v, w_o, b_o, ln1_g, ln1_b, w_ff1, b_ff1, w_ff2, b_ff2, ln2_g, ln2_b, the order of the weight and
// gradient slices that Forward and Backward take.
func (s *SelfAttention[T]) Params() []*param.Tensor[T] {
	var out []*param.Tensor[T]
	for _, b := range s.Blocks {
		out = append(out, block.List(s.block(), b)...)
	}
	return out
}

// Init draws the weights as PyTorch's nn.TransformerEncoderLayer does: the query, key and value projections
// Xavier-uniform (bound √(6/(D+D)), as for its packed in_proj) with zero biases, the output projection uniform in
// ±1/√D with a zero bias, the feed-forward layers uniform in ±1/√fan-in (weights and biases), layer-norm gains 1
// and biases 0.
func (s *SelfAttention[T]) Init(rng *rand.Rand) {
	xavier := math.Sqrt(6 / float64(2*s.Dim))
	for i := range s.Blocks {
		b, a, ff := &s.Blocks[i], s.Blocks[i].Self, s.Blocks[i].FF
		for _, w := range []*param.Tensor[T]{a.QW, a.KW, a.VW} {
			param.Uniform(w, xavier, rng)
		}
		for _, z := range []*param.Tensor[T]{a.QB, a.KB, a.VB, a.OB, b.Norms[0].Bias, b.Norms[1].Bias} {
			clear(z.Data)
		}
		param.Uniform(a.OW, param.InvSqrt(s.Dim), rng)
		param.Uniform(ff.W1, param.InvSqrt(s.Dim), rng)
		param.Uniform(ff.B1, param.InvSqrt(s.Dim), rng)
		param.Uniform(ff.W2, param.InvSqrt(s.FFN), rng)
		param.Uniform(ff.B2, param.InvSqrt(s.FFN), rng)
		for _, g := range []*param.Tensor[T]{b.Norms[0].Gain, b.Norms[1].Gain} {
			for j := range g.Data {
				g.Data[j] = 1
			}
		}
	}
}

// Weights returns the data of every tensor of Params, the weights argument of Forward and Backward.
func (s *SelfAttention[T]) Weights() [][]T { return param.Data(s.Params()) }

// SelfAttentionCache is what SelfAttention.Forward keeps for Backward: every block's input and intermediate
// values, in arena memory that the next Forward with the same arena and name overwrites.
type SelfAttentionCache[T kernels.Float] struct {
	blocks       []*block.BlockCache[T]
	lengths      []int
	rows, srcLen int
	arena        *kernels.Arena[T] // also holds the backward pass's scratch, under name
	name         string
}

// Blocks is the number of blocks the cache holds.
func (c *SelfAttentionCache[T]) Blocks() int { return len(c.blocks) }

// Weights returns the attention weights of block l, head j: (rows, srcLen, srcLen), row r·S+i the weights of
// query position i of sentence r over the key positions (0 on padded keys, all 0 for padded queries), copied
// out of the cache.
func (c *SelfAttentionCache[T]) Weights(l, j int) []T {
	b := c.blocks[l].Self
	out := make([]T, c.rows*c.srcLen*c.srcLen)
	s2 := c.srcLen * c.srcLen
	for r := 0; r < c.rows; r++ {
		copy(out[r*s2:(r+1)*s2], b.Att[(r*b.Heads+j)*s2:][:s2])
	}
	return out
}

// Forward runs the blocks over memory (B, S, D) batch-major, lengths the rows' real lengths, and writes the
// last block's output into out (B, S, D); rows of positions past a sentence's length come out 0. weights are the
// data of Params in order (Weights). Buffers come from arena under names starting with name; memory must stay
// unchanged until Backward has run.
func (s *SelfAttention[T]) Forward(weights [][]T, memory []T, lengths []int, rows, srcLen int, out []T, arena *kernels.Arena[T], name string) *SelfAttentionCache[T] {
	n := rows * srcLen
	if len(memory) != n*s.Dim || len(out) != n*s.Dim || len(lengths) != rows || len(weights) != blockTensors*len(s.Blocks) {
		panic(fmt.Sprintf("encoder: SelfAttention.Forward got memory %d, out %d, %d lengths, %d weights for %d×%d×%d and %d blocks",
			len(memory), len(out), len(lengths), len(weights), rows, srcLen, s.Dim, len(s.Blocks)))
	}
	cache := &SelfAttentionCache[T]{lengths: lengths, rows: rows, srcLen: srcLen, arena: arena, name: name}
	x := memory
	for l := range s.Blocks {
		c := block.NewBlockCache(arena, fmt.Sprintf("%s.%d", name, l), s.block(), rows, srcLen, 0, lengths, nil)
		x = c.Forward(s.blockWeights(weights[l*blockTensors:(l+1)*blockTensors]), x, nil, nil, false)
		block.ClearPadded(x, lengths, rows, srcLen, s.Dim)
		cache.blocks = append(cache.blocks, c)
	}
	copy(out, x)
	return cache
}

// Backward adds the gradients of the weights into grads (same order and shapes as weights) and writes the
// gradient of the memory into dMemory, given dOut, the gradient of Forward's out (its rows at padded positions
// are ignored: those outputs are constant 0). It reads what cache kept. b_K's gradient stays 0, its exact value
// (block.Cache.Backward says why).
func (s *SelfAttention[T]) Backward(weights [][]T, cache *SelfAttentionCache[T], dOut, dMemory []T, grads [][]T) {
	if len(grads) != len(weights) || len(dOut) != len(dMemory) {
		panic(fmt.Sprintf("encoder: SelfAttention.Backward got %d grads for %d weights, dOut %d, dMemory %d", len(grads), len(weights), len(dOut), len(dMemory)))
	}
	scratch := block.NewBlockScratch(cache.arena, cache.name+".grad", cache.blocks[0])
	copy(dMemory, dOut)
	for l := len(s.Blocks) - 1; l >= 0; l-- {
		// forward: the block's output with padded rows set to 0, so those rows pass no gradient
		block.ClearPadded(dMemory, cache.lengths, cache.rows, cache.srcLen, s.Dim)
		at := func(w [][]T) block.BlockWeights[T] { return s.blockWeights(w[l*blockTensors : (l+1)*blockTensors]) }
		cache.blocks[l].Backward(at(weights), at(grads), dMemory, nil, nil, scratch)
	}
}

// joinHalves writes memory (B, S, 2·half) = [fwd ; bwd] from the fused directions' packed outputs (S+2, B, half),
// or, with split, the halves of memory into fwd and bwd (their final states, past the S positions, untouched).
func joinHalves[T kernels.Float](rows, srcLen, half int, memory, fwd, bwd []T, split bool) {
	for r := 0; r < rows; r++ {
		for i := 0; i < srcLen; i++ {
			m, at := memory[(r*srcLen+i)*2*half:][:2*half], (i*rows+r)*half
			if split {
				copy(fwd[at:at+half], m[:half])
				copy(bwd[at:at+half], m[half:])
			} else {
				copy(m[:half], fwd[at:at+half])
				copy(m[half:], bwd[at:at+half])
			}
		}
	}
}

// fusedGraph adds the blocks to a training graph as one op over the fused recurrent encoder's two halves fwd and
// bwd, packed (S+2, B, H): the final states, past the S positions, pass through unchanged. It returns the new
// halves, packed alike.
func (s *SelfAttention[T]) fusedGraph(p *graph.Params[T], fwd, bwd *G.Node, lengths *[]int, rows, srcLen int) (*G.Node, *G.Node) {
	half := s.Dim / 2
	size := fwd.Shape().TotalSize()
	params := s.Params()
	inputs := []*G.Node{fwd, bwd}
	for _, t := range params {
		inputs = append(inputs, p.Whole(t))
	}
	n := rows * srcLen * s.Dim
	var cache *SelfAttentionCache[T]
	const name = "enc.self"
	outShape := append(tensor.Shape{2}, fwd.Shape().Clone()...)
	out := graph.Fused(graph.FusedOp[T]{
		Name:  fmt.Sprintf("SelfAttention(%d,%d,%d,%v)", len(s.Blocks), s.Dim, s.Heads, fwd.Shape()),
		Shape: outShape,
		Forward: func(v [][]T, out []T) {
			memory, result := p.Arena.Get(name+".memory", n), p.Arena.Get(name+".result", n)
			joinHalves(rows, srcLen, half, memory, v[0], v[1], false)
			cache = s.Forward(v[2:], memory, *lengths, rows, srcLen, result, p.Arena, name)
			copy(out[:size], v[0]) // the final states; the states are overwritten next
			copy(out[size:], v[1])
			joinHalves(rows, srcLen, half, result, out[:size], out[size:], true)
		},
		Backward: func(v [][]T, g []T) [][]T {
			dOut, dMemory := p.Arena.Get(name+".dOut", n), p.Arena.Get(name+".dMemory", n)
			grads := make([][]T, len(v))
			grads[0], grads[1] = p.Arena.Get(name+".dFwd", size), p.Arena.Get(name+".dBwd", size)
			for i, t := range params {
				grads[2+i] = p.Arena.Get(name+".grad."+t.Name, len(t.Data))
				clear(grads[2+i])
			}
			joinHalves(rows, srcLen, half, dOut, g[:size], g[size:], false)
			s.Backward(v[2:], cache, dOut, dMemory, grads[2:])
			copy(grads[0], g[:size]) // final states' gradients pass through; the states' are overwritten next
			copy(grads[1], g[size:])
			joinHalves(rows, srcLen, half, dMemory, grads[0], grads[1], true)
			return grads
		},
	}, inputs...)
	return graph.Select[T](out, 0), graph.Select[T](out, 1)
}

// Graph adds the blocks to a training graph built from gorgonia's own ops, over batch-major halves fwd and bwd
// (B, S, H): the autodiff reference of the fused op. It returns the new halves, batch-major.
func (s *SelfAttention[T]) Graph(p *graph.Params[T], fwd, bwd *G.Node, lengths *[]int, rows, srcLen int) (*G.Node, *G.Node) {
	n, half := rows*srcLen, s.Dim/2
	flat := func(x *G.Node, w int) *G.Node { return G.Must(G.Reshape(x, []int{n, w})) }
	x := graph.Concat[T]([]*G.Node{flat(fwd, half), flat(bwd, half)})
	for l := range s.Blocks {
		x, _ = block.GraphBlock(p, s.block(), s.Blocks[l], x, nil, rows, srcLen, 0, func(scores *G.Node) *G.Node {
			return graph.SelfMaskedSoftmax[T](scores, lengths, srcLen)
		}, nil, nil)
		x = graph.MaskPositions[T](x, lengths, srcLen)
	}
	split := func(from int) *G.Node {
		return G.Must(G.Reshape(graph.Columns[T](x, from, from+half), []int{rows, srcLen, half}))
	}
	return split(0), split(half)
}
