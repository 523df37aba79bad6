// Package encoder turns a batch of source sentences into hidden states: embeddings followed by one or more
// bidirectional LSTM (or GRU) layers, optionally followed by Transformer self-attention blocks (selfattn.go). Each
// layer's one plain-Go forward pass serves inference and, with a cache and its backward pass, the fused training
// op; the same layers built from gorgonia's ops are the unfused training graph.
package encoder

import (
	"fmt"
	"math/rand/v2"

	"github.com/attend-nmt/attend/kernels"
	"github.com/attend-nmt/attend/param"
)

// Cell names the recurrent cell of the encoder.
type Cell string

// The recurrent cells the encoder supports.
const (
	LSTM Cell = "lstm"
	GRU  Cell = "gru"
)

// Gates is the number of gate blocks of the cell's weights: 4 for an LSTM, 3 for a GRU.
func (c Cell) Gates() int {
	if c == GRU {
		return 3
	}
	return 4
}

// Validate reports an unknown cell name.
func (c Cell) Validate() error {
	if c != LSTM && c != GRU {
		return fmt.Errorf("encoder: unknown cell %q (want lstm or gru)", string(c))
	}
	return nil
}

// Config gives the encoder's sizes.
type Config struct {
	Vocab  int  // source vocabulary size
	Emb    int  // embedding width
	Hidden int  // hidden units per direction
	Cell   Cell // lstm or gru
	// Layers is the number of stacked bidirectional layers (0 counts as 1): layer l+1 reads [fwd ; bwd] of layer
	// l, with dropout between them in training.
	Layers int
	// SelfAttentionLayers is the number of Transformer blocks over the recurrent states (0: none); Heads is their
	// number of heads, which must divide the memory width 2·Hidden.
	SelfAttentionLayers, Heads int
}

// Direction holds the weights of one direction of the recurrent layer. For an LSTM, Bias is the one (4, H) bias
// and HiddenBias is nil; for a GRU, Bias is b_ih (3, H) and HiddenBias is b_hh (3, H), kept apart because the
// new-gate candidate multiplies only the hidden part by the reset gate.
type Direction[T kernels.Float] struct {
	InputW, HiddenW  *param.Tensor[T] // (gates, In, H), (gates, H, H)
	Bias, HiddenBias *param.Tensor[T] // (gates, H)
}

// Layer is one bidirectional recurrent layer: its forward and its backward direction.
type Layer[T kernels.Float] struct {
	Fwd, Bwd Direction[T]
}

// directions returns the layer's two directions, forward first.
func (l Layer[T]) directions() [2]Direction[T] { return [2]Direction[T]{l.Fwd, l.Bwd} }

// Encoder is the embedding table, the stacked bidirectional recurrent layers, and the self-attention blocks over
// the last layer's states when Cfg.SelfAttentionLayers > 0.
type Encoder[T kernels.Float] struct {
	Cfg    Config
	Emb    *param.Tensor[T]  // (Vocab, Emb)
	Layers []Layer[T]        // Layers[0] reads the embeddings, Layers[l] the states [fwd ; bwd] of Layers[l-1]
	Self   *SelfAttention[T] // nil without self-attention layers
}

// New registers the encoder's parameters in set (names "src_emb", "enc.fwd.*", "enc.bwd.*" for the first layer,
// "enc.lN.fwd.*", "enc.lN.bwd.*" for layer N ≥ 2, then "enc.self.L.*" for each self-attention block) and returns it.
func New[T kernels.Float](set *param.Set[T], cfg Config) *Encoder[T] {
	e := &Encoder[T]{Cfg: cfg, Emb: set.Add("src_emb", cfg.Vocab, cfg.Emb)}
	for l := range cfg.layers() {
		prefix, in := "enc", cfg.Emb
		if l > 0 {
			prefix, in = fmt.Sprintf("enc.l%d", l+1), 2*cfg.Hidden
		}
		e.Layers = append(e.Layers, Layer[T]{
			Fwd: newDirection(set, prefix+".fwd", cfg, in),
			Bwd: newDirection(set, prefix+".bwd", cfg, in),
		})
	}
	if cfg.SelfAttentionLayers > 0 {
		e.Self = NewSelfAttention(set, cfg.SelfAttentionLayers, 2*cfg.Hidden, cfg.Heads)
	}
	return e
}

// layers is Layers, with 0 counted as 1.
func (c Config) layers() int { return max(c.Layers, 1) }

// inputWidth is the width of layer l's input: the embedding for the first layer, [fwd ; bwd] above it.
func (c Config) inputWidth(l int) int {
	if l == 0 {
		return c.Emb
	}
	return 2 * c.Hidden
}

func newDirection[T kernels.Float](set *param.Set[T], prefix string, cfg Config, in int) Direction[T] {
	g, h := cfg.Cell.Gates(), cfg.Hidden
	d := Direction[T]{
		InputW:  set.Add(prefix+".w_ih", g, in, h),
		HiddenW: set.Add(prefix+".w_hh", g, h, h),
		Bias:    set.Add(prefix+".b", g, h),
	}
	if cfg.Cell == GRU {
		d.Bias.Name = prefix + ".b_ih"
		d.HiddenBias = set.Add(prefix+".b_hh", g, h)
	} else {
		d.Bias.Copies = 2 // PyTorch's b_ih + b_hh, trained as the pair (see param.Tensor.Copies)
	}
	return d
}

// Init draws the weights as PyTorch does: embeddings from N(0,1) with the padding row zero, recurrent weights
// and biases uniform in ±1/sqrt(H). An LSTM's one bias is drawn as PyTorch's b_ih + b_hh, the sum of two such
// draws (param.UniformSum), so that its spread is the same; a GRU keeps the two biases apart.
func (e *Encoder[T]) Init(rng *rand.Rand) {
	param.Normal(e.Emb, 1, rng)
	clear(e.Emb.Data[:e.Cfg.Emb]) // row 0 is <pad>
	for _, layer := range e.Layers {
		for _, d := range layer.directions() {
			e.initDirection(d, rng)
		}
	}
	if e.Self != nil {
		e.Self.Init(rng)
	}
}

func (e *Encoder[T]) initDirection(d Direction[T], rng *rand.Rand) {
	bound := param.InvSqrt(e.Cfg.Hidden)
	param.Uniform(d.InputW, bound, rng)
	param.Uniform(d.HiddenW, bound, rng)
	if d.HiddenBias == nil {
		param.UniformSum(d.Bias, bound, rng)
	} else {
		param.Uniform(d.Bias, bound, rng)
		param.Uniform(d.HiddenBias, bound, rng)
	}
}

// Output is the encoder's result for a batch.
type Output[T kernels.Float] struct {
	Rows, SrcLen, Hidden int
	// Memory is (Rows, SrcLen, 2*Hidden): at each position the last recurrent layer's forward state then its
	// backward state, or with
	// self-attention layers the last block's output there. Positions past a row's length hold the forward state
	// of its last word and a zero backward state (0 with self-attention layers); attention masks them.
	Memory []T
	// FinalH and FinalC are (Rows, 2*Hidden): the last recurrent layer's [forward state after the last word ;
	// backward state after the first word]. For a GRU, FinalC equals FinalH.
	FinalH, FinalC []T
	// Self holds what the self-attention blocks computed, their weights among them (SelfAttentionCache.Weights);
	// nil without self-attention layers.
	Self *SelfAttentionCache[T]
}

// Forward encodes a time-major batch: src is (srcLen, rows) token ids, lengths the real length of each row.
func (e *Encoder[T]) Forward(src []int, lengths []int, rows, srcLen int) *Output[T] {
	if len(src) != rows*srcLen || len(lengths) != rows {
		panic(fmt.Sprintf("encoder: Forward got %d ids and %d lengths for %d rows × %d positions", len(src), len(lengths), rows, srcLen))
	}
	h, emb := e.Cfg.Hidden, e.Cfg.Emb
	out := &Output[T]{Rows: rows, SrcLen: srcLen, Hidden: h,
		Memory: make([]T, rows*srcLen*2*h), FinalH: make([]T, rows*2*h), FinalC: make([]T, rows*2*h)}
	// x is the current layer's input, time-major (srcLen, rows, in): the embeddings, then each layer's states.
	x := make([]T, srcLen*rows*emb)
	kernels.Embed(e.Emb.Data, src, emb, x)
	for l, layer := range e.Layers {
		in := e.Cfg.inputWidth(l)
		if l > 0 { // the layer below's states [fwd ; bwd], batch-major in out.Memory, become time-major input
			x = make([]T, srcLen*rows*in)
			for t := 0; t < srcLen; t++ {
				for r := 0; r < rows; r++ {
					copy(x[(t*rows+r)*in:(t*rows+r+1)*in], out.Memory[(r*srcLen+t)*2*h:(r*srcLen+t+1)*2*h])
				}
			}
		}
		states, finalH, finalC := make([]T, srcLen*rows*h), make([]T, rows*h), make([]T, rows*h)
		for dir, d := range layer.directions() {
			rec := newRecurrence[T](e.Cfg.Cell, srcLen, rows, in, h, dir == 1, nil, nil, "")
			rec.forward(d.weights(), x, lengths, states, finalH, finalC, nil)
			for r := 0; r < rows; r++ {
				for t := 0; t < srcLen; t++ {
					copy(out.Memory[(r*srcLen+t)*2*h+dir*h:][:h], states[(t*rows+r)*h:(t*rows+r+1)*h])
				}
				copy(out.FinalH[r*2*h+dir*h:][:h], finalH[r*h:(r+1)*h])
				copy(out.FinalC[r*2*h+dir*h:][:h], finalC[r*h:(r+1)*h])
			}
		}
	}
	if e.Self != nil {
		// The blocks replace the memory; the final states stay those of the recurrent layer.
		memory := make([]T, len(out.Memory))
		out.Self = e.Self.Forward(e.Self.Weights(), out.Memory, lengths, rows, srcLen, memory, kernels.NewArena[T](), "enc.self")
		out.Memory = memory
	}
	return out
}
