// Package encoder turns a batch of source sentences into hidden states: embeddings followed by a bidirectional
// LSTM (or GRU), optionally followed by Transformer self-attention blocks (selfattn.go), as a plain-Go forward
// pass for inference and as a gorgonia graph for training.
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

// Encoder is the embedding table plus a forward and a backward recurrent direction, and the self-attention
// blocks over their states when Cfg.SelfAttentionLayers > 0.
type Encoder[T kernels.Float] struct {
	Cfg      Config
	Emb      *param.Tensor[T] // (Vocab, Emb)
	Fwd, Bwd Direction[T]
	Self     *SelfAttention[T] // nil without self-attention layers
}

// New registers the encoder's parameters in set (names "src_emb", "enc.fwd.*", "enc.bwd.*", then "enc.self.L.*"
// for each self-attention block) and returns it.
func New[T kernels.Float](set *param.Set[T], cfg Config) *Encoder[T] {
	e := &Encoder[T]{Cfg: cfg, Emb: set.Add("src_emb", cfg.Vocab, cfg.Emb)}
	e.Fwd = newDirection(set, "enc.fwd", cfg)
	e.Bwd = newDirection(set, "enc.bwd", cfg)
	if cfg.SelfAttentionLayers > 0 {
		e.Self = NewSelfAttention(set, cfg.SelfAttentionLayers, 2*cfg.Hidden, cfg.Heads)
	}
	return e
}

func newDirection[T kernels.Float](set *param.Set[T], prefix string, cfg Config) Direction[T] {
	g, h := cfg.Cell.Gates(), cfg.Hidden
	d := Direction[T]{
		InputW:  set.Add(prefix+".w_ih", g, cfg.Emb, h),
		HiddenW: set.Add(prefix+".w_hh", g, h, h),
		Bias:    set.Add(prefix+".b", g, h),
	}
	if cfg.Cell == GRU {
		d.Bias.Name = prefix + ".b_ih"
		d.HiddenBias = set.Add(prefix+".b_hh", g, h)
	}
	return d
}

// Init draws the weights as PyTorch does: embeddings from N(0,1) with the padding row zero, recurrent weights
// and biases uniform in ±1/sqrt(H). An LSTM's one bias is drawn as PyTorch's b_ih + b_hh, the sum of two such
// draws (param.UniformSum), so that its spread is the same; a GRU keeps the two biases apart.
func (e *Encoder[T]) Init(rng *rand.Rand) {
	param.Normal(e.Emb, 1, rng)
	clear(e.Emb.Data[:e.Cfg.Emb]) // row 0 is <pad>
	for _, d := range []Direction[T]{e.Fwd, e.Bwd} {
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
	if e.Self != nil {
		e.Self.Init(rng)
	}
}

// Output is the encoder's result for a batch.
type Output[T kernels.Float] struct {
	Rows, SrcLen, Hidden int
	// Memory is (Rows, SrcLen, 2*Hidden): at each position the forward state then the backward state, or with
	// self-attention layers the last block's output there. Positions past a row's length hold the forward state
	// of its last word and a zero backward state (0 with self-attention layers); attention masks them.
	Memory []T
	// FinalH and FinalC are (Rows, 2*Hidden): [forward state after the last word ; backward state after the first
	// word]. For a GRU, FinalC equals FinalH.
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
	h := e.Cfg.Hidden
	out := &Output[T]{Rows: rows, SrcLen: srcLen, Hidden: h,
		Memory: make([]T, rows*srcLen*2*h), FinalH: make([]T, rows*2*h), FinalC: make([]T, rows*2*h)}
	x := make([]T, rows*e.Cfg.Emb)
	run := newRunner[T](e.Cfg, rows)
	for dir, d := range []Direction[T]{e.Fwd, e.Bwd} {
		run.reset()
		for step := 0; step < srcLen; step++ {
			t := step
			if dir == 1 {
				t = srcLen - 1 - step
			}
			for r := 0; r < rows; r++ {
				id := src[t*rows+r]
				copy(x[r*e.Cfg.Emb:(r+1)*e.Cfg.Emb], e.Emb.Data[id*e.Cfg.Emb:(id+1)*e.Cfg.Emb])
			}
			run.step(d, x, t, lengths)
			for r := 0; r < rows; r++ {
				copy(out.Memory[(r*srcLen+t)*2*h+dir*h:][:h], run.h[r*h:(r+1)*h])
			}
		}
		for r := 0; r < rows; r++ {
			copy(out.FinalH[r*2*h+dir*h:][:h], run.h[r*h:(r+1)*h])
			copy(out.FinalC[r*2*h+dir*h:][:h], run.c[r*h:(r+1)*h])
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

// runner holds the recurrent state and scratch buffers of one direction.
type runner[T kernels.Float] struct {
	cfg              Config
	rows             int
	h, c, hNew, cNew []T
	gatesX, gatesH   []T
}

func newRunner[T kernels.Float](cfg Config, rows int) *runner[T] {
	h, g := cfg.Hidden, cfg.Cell.Gates()
	return &runner[T]{cfg: cfg, rows: rows,
		h: make([]T, rows*h), c: make([]T, rows*h), hNew: make([]T, rows*h), cNew: make([]T, rows*h),
		gatesX: make([]T, rows*g*h), gatesH: make([]T, rows*g*h)}
}

func (r *runner[T]) reset() { clear(r.h); clear(r.c) }

// step advances every row by one position t; rows whose length is <= t keep their state (masked update), which
// makes the backward direction start at each row's own last word.
func (r *runner[T]) step(d Direction[T], x []T, t int, lengths []int) {
	h, g, emb := r.cfg.Hidden, r.cfg.Cell.Gates(), r.cfg.Emb
	kernels.Project(x, r.rows, emb, d.InputW.Data, g, h, r.gatesX, false)
	kernels.AddBias(r.gatesX, r.rows, g*h, d.Bias.Data)
	if r.cfg.Cell == GRU {
		kernels.Project(r.h, r.rows, h, d.HiddenW.Data, g, h, r.gatesH, false)
		kernels.AddBias(r.gatesH, r.rows, g*h, d.HiddenBias.Data)
		kernels.GRUPointwise(r.gatesX, r.gatesH, r.h, r.rows, h, r.hNew)
		copy(r.cNew, r.hNew)
	} else {
		kernels.Project(r.h, r.rows, h, d.HiddenW.Data, g, h, r.gatesX, true)
		kernels.LSTMPointwise(r.gatesX, r.c, r.rows, h, r.hNew, r.cNew)
	}
	for row := 0; row < r.rows; row++ {
		if t < lengths[row] {
			copy(r.h[row*h:(row+1)*h], r.hNew[row*h:(row+1)*h])
			copy(r.c[row*h:(row+1)*h], r.cNew[row*h:(row+1)*h])
		}
	}
}
