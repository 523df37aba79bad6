// Package transformer is the self-attention-only encoder–decoder (model.type transformer): its parameters, its
// forward and backward passes for training, and its step-by-step decoding with cached keys and values.
//
// Letters used in this package, as in llm.c: B rows (sentences), S source positions, T target positions, D the
// model width (d_model), NH heads, HD = D/NH the width of one head, F the feed-forward layer's inner width, V a
// vocabulary's size.
//
// The blocks are pre-norm (layer normalisation before each sub-layer, the residual added after it, one more
// layer norm after the last block), as OpenNMT-py's and fairseq's Transformers normalise by default: the
// residual path carries the embeddings unchanged to the top, so training is stable from the first step without
// the long warm-up that post-norm (Vaswani et al. 2017) needs, which matters for the small corpora attend trains
// on.
//
//	encoder: x = √D · E_src[w] + P;  per block: x += Drop(SelfAttn(LN1(x)));  x += Drop(FFN(LN2(x)));  mem = LN(x)
//	decoder: y = √D · E_tgt[w] + P;  per block: y += Drop(CausalSelfAttn(LN1(y)));  y += Drop(CrossAttn(LN2(y), mem));
//	         y += Drop(FFN(LN3(y)));  out = LN(y);  logits = out W_out + b_out  (W_out = E_tgtᵀ when tied)
//
// with FFN(x) = ReLU(x W_1 + b_1) W_2 + b_2, P the positions (sinusoidal, or learned), and dropout on the
// embeddings' sum too. Attention is multi-head scaled dot-product attention: head j reads columns
// [j·HD, (j+1)·HD) of Q = x W_Q + b_Q, K and V, padded source keys get weight 0, and the decoder's
// self-attention sees only positions up to its own.
package transformer

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/attend-nmt/attend/block"
	"github.com/attend-nmt/attend/kernels"
	"github.com/attend-nmt/attend/param"
)

// Positions settings of Config.Positions.
const (
	Sinusoidal = "sinusoidal" // the fixed sines and cosines of Vaswani et al. (2017); "" means the same
	Learned    = "learned"    // a learned vector per position, up to Config.MaxPositions
)

// Config is the Transformer's shape.
type Config struct {
	SrcVocab, TgtVocab int
	Dim                int    // model width d_model: embeddings, every block's input and output
	Heads              int    // attention heads; must divide Dim
	FF                 int    // inner width of the feed-forward layers
	Layers             int    // encoder blocks, and as many decoder blocks
	Positions          string // Sinusoidal or Learned
	MaxPositions       int    // positions a learned table holds (read with Learned only); later positions reuse the last
	TieOutput          bool   // the output layer's weights are the target embeddings, transposed
	// AttentionLayer is the decoder block (0-based) whose cross-attention is reported as where the model looked
	// (heat maps, alignments, --attention): averaged over its heads, or AlignmentHead's alone.
	AttentionLayer int
	// AlignmentHead is the head (1 to Heads) of block AttentionLayer's cross-attention that is reported alone,
	// and that guided alignment trains (Graph's guide); 0 reports the heads' average, and Graph takes no guide.
	// It counts from 1, unlike AttentionLayer, so that a Config without it keeps the average.
	AlignmentHead int
}

// reportWeight is the weight of head j in the attention reported as where the model looked: 1/NH each for the
// average, else 1 for AlignmentHead and 0 for the others.
func (c Config) reportWeight(j int) float64 {
	switch {
	case c.AlignmentHead == 0:
		return 1 / float64(c.Heads)
	case j == c.AlignmentHead-1:
		return 1
	}
	return 0
}

// Validate reports a shape the Transformer cannot take.
func (c Config) Validate() error {
	switch {
	case c.Dim < 1 || c.Layers < 1 || c.FF < 1:
		return fmt.Errorf("transformer: width %d, %d layers, feed-forward width %d; each must be at least 1", c.Dim, c.Layers, c.FF)
	case c.Heads < 1 || c.Dim%c.Heads != 0:
		return fmt.Errorf("transformer: %d heads do not divide the width %d", c.Heads, c.Dim)
	case c.Positions != "" && c.Positions != Sinusoidal && c.Positions != Learned:
		return fmt.Errorf("transformer: positions %q; want %s or %s", c.Positions, Sinusoidal, Learned)
	case c.AttentionLayer < 0 || c.AttentionLayer >= c.Layers:
		return fmt.Errorf("transformer: attention layer %d of %d decoder blocks; want 0 to %d", c.AttentionLayer, c.Layers, c.Layers-1)
	case c.AlignmentHead < 0 || c.AlignmentHead > c.Heads:
		return fmt.Errorf("transformer: alignment head %d of %d heads; want 0 (the average) to %d", c.AlignmentHead, c.Heads, c.Heads)
	case c.Positions == Learned && c.MaxPositions < 1:
		return fmt.Errorf("transformer: learned positions need at least 1 position, not %d", c.MaxPositions)
	}
	return nil
}

// Model is the Transformer's parameters.
type Model[T kernels.Float] struct {
	Cfg            Config
	SrcEmb, TgtEmb *param.Tensor[T] // (V_src, D), (V_tgt, D)
	SrcPos, TgtPos *param.Tensor[T] // (MaxPositions, D) with learned positions; nil with sinusoidal ones
	// Enc and Dec are the encoder's and decoder's blocks: layer norms, attentions (Q = x W_Q + b_Q, K = m W_K +
	// b_K, V = m W_V + b_V, each (D, D) with head j in columns [j·HD, (j+1)·HD), and the output projection
	// C W_O + b_O of the heads' contexts C side by side) and feed-forward layers (W1 (D, F), B1 (F), W2 (F, D),
	// B2 (D)); a decoder block's Cross attends over the encoder's output.
	Enc, Dec         []block.BlockTensors[T]
	EncNorm, DecNorm block.NormTensors[T] // after the last encoder block, and after the last decoder block
	OutW             *param.Tensor[T]     // (D, V_tgt); nil when tied to TgtEmb
	OutB             *param.Tensor[T]     // (V_tgt)
}

// New registers a Transformer's parameters in set, all named "tf.…", and returns it with zero weights; call
// Init or load a checkpoint. It does not pack the set.
func New[T kernels.Float](set *param.Set[T], cfg Config) (*Model[T], error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	d, f := cfg.Dim, cfg.FF
	m := &Model[T]{Cfg: cfg, SrcEmb: set.Add("tf.src_emb", cfg.SrcVocab, d), TgtEmb: set.Add("tf.tgt_emb", cfg.TgtVocab, d)}
	if cfg.Positions == Learned {
		m.SrcPos, m.TgtPos = set.Add("tf.src_pos", cfg.MaxPositions, d), set.Add("tf.tgt_pos", cfg.MaxPositions, d)
	}
	norm := func(name string) block.NormTensors[T] {
		return block.NormTensors[T]{Gain: set.Add(name+"_g", d), Bias: set.Add(name+"_b", d)}
	}
	attention := func(name string) block.Tensors[T] {
		return block.Tensors[T]{
			QW: set.Add(name+".w_q", d, d), QB: set.Add(name+".b_q", d),
			KW: set.Add(name+".w_k", d, d), KB: set.Add(name+".b_k", d),
			VW: set.Add(name+".w_v", d, d), VB: set.Add(name+".b_v", d),
			OW: set.Add(name+".w_o", d, d), OB: set.Add(name+".b_o", d)}
	}
	ff := func(name string) block.FFTensors[T] {
		return block.FFTensors[T]{W1: set.Add(name+".w_1", d, f), B1: set.Add(name+".b_1", f),
			W2: set.Add(name+".w_2", f, d), B2: set.Add(name+".b_2", d)}
	}
	// each block's tensors registered in block.List's order (pre-norm)
	for l := 0; l < cfg.Layers; l++ {
		p := fmt.Sprintf("tf.enc.%d.", l)
		n1, self, n2, feed := norm(p+"ln1"), attention(p+"self"), norm(p+"ln2"), ff(p+"ff")
		m.Enc = append(m.Enc, block.BlockTensors[T]{Norms: []block.NormTensors[T]{n1, n2}, Self: self, FF: feed})
	}
	m.EncNorm = norm("tf.enc.ln")
	for l := 0; l < cfg.Layers; l++ {
		p := fmt.Sprintf("tf.dec.%d.", l)
		n1, self, n2, cross, n3, feed := norm(p+"ln1"), attention(p+"self"), norm(p+"ln2"), attention(p+"cross"), norm(p+"ln3"), ff(p+"ff")
		m.Dec = append(m.Dec, block.BlockTensors[T]{Norms: []block.NormTensors[T]{n1, n2, n3}, Self: self, Cross: cross, FF: feed})
	}
	m.DecNorm = norm("tf.dec.ln")
	if !cfg.TieOutput {
		m.OutW = set.Add("tf.out_w", d, cfg.TgtVocab)
	}
	m.OutB = set.Add("tf.out_b", cfg.TgtVocab)
	return m, nil
}

// Init draws fresh weights from rng as fairseq's Transformer does: embeddings normal with standard deviation
// 1/√D (so that √D times them has unit scale), every projection and feed-forward weight Xavier-uniform, biases
// 0, layer-norm gains 1; a learned position table normal like the embeddings; an untied output layer
// Xavier-uniform.
func (m *Model[T]) Init(rng *rand.Rand) {
	d, f := m.Cfg.Dim, m.Cfg.FF
	std := 1 / math.Sqrt(float64(d))
	param.Normal(m.SrcEmb, std, rng)
	param.Normal(m.TgtEmb, std, rng)
	if m.SrcPos != nil {
		param.Normal(m.SrcPos, std, rng)
		param.Normal(m.TgtPos, std, rng)
	}
	xavier := func(t *param.Tensor[T], in, out int) { param.Uniform(t, math.Sqrt(6/float64(in+out)), rng) }
	norm := func(n block.NormTensors[T]) {
		for j := range n.Gain.Data {
			n.Gain.Data[j] = 1
		}
		clear(n.Bias.Data)
	}
	attention := func(a block.Tensors[T]) {
		for _, w := range []*param.Tensor[T]{a.QW, a.KW, a.VW, a.OW} {
			xavier(w, d, d)
		}
		for _, b := range []*param.Tensor[T]{a.QB, a.KB, a.VB, a.OB} {
			clear(b.Data)
		}
	}
	for i, b := range append(append([]block.BlockTensors[T](nil), m.Enc...), m.Dec...) {
		attention(b.Self)
		if i >= len(m.Enc) {
			attention(b.Cross)
		}
		xavier(b.FF.W1, d, f)
		xavier(b.FF.W2, f, d)
		clear(b.FF.B1.Data)
		clear(b.FF.B2.Data)
		for _, n := range b.Norms {
			norm(n)
		}
	}
	norm(m.EncNorm)
	norm(m.DecNorm)
	if m.OutW != nil {
		xavier(m.OutW, d, m.Cfg.TgtVocab)
	}
	clear(m.OutB.Data)
}

// attention is the shape of every attention of the model: NH heads over the width D, each projection one
// (D, D) matrix with head j in columns [j·HD, (j+1)·HD).
func (m *Model[T]) attention() block.Attention {
	d := m.Cfg.Dim
	return block.Attention{Heads: m.Cfg.Heads, HeadDim: m.HeadDim(), QueryDim: d, MemDim: d, OutDim: d}
}

// block is the shape of the encoder's blocks, or with cross the decoder's: pre-norm, the decoder's
// self-attention causal.
func (m *Model[T]) block(cross bool) block.Block {
	return block.Block{Attention: m.attention(), FF: m.Cfg.FF, Cross: cross, Causal: cross}
}

// HeadDim is the width of one attention head, D/NH.
func (m *Model[T]) HeadDim() int { return m.Cfg.Dim / m.Cfg.Heads }

// Position writes into out (D values) the sinusoidal encoding of position pos (0-based), as Vaswani et al.
// (2017) define it: out[2i] = sin(pos / 10000^(2i/D)), out[2i+1] = cos(pos / 10000^(2i/D)).
func Position[T kernels.Float](out []T, pos int) {
	d := len(out)
	for i := 0; 2*i < d; i++ {
		angle := float64(pos) / math.Pow(10000, float64(2*i)/float64(d))
		out[2*i] = T(math.Sin(angle))
		if 2*i+1 < d {
			out[2*i+1] = T(math.Cos(angle))
		}
	}
}

// Memory is the encoder's output of a batch: what the decoder's cross-attention reads.
type Memory[T kernels.Float] struct {
	Rows, SrcLen int
	Lengths      []int // each row's real source length
	States       []T   // (B, S, D) batch-major; the rows of positions past a sentence's length are 0
}
