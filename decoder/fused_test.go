package decoder

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/attend-nmt/attend/align"
	"github.com/attend-nmt/attend/internal/gradcheck"
	"github.com/attend-nmt/attend/kernels"
	"github.com/attend-nmt/attend/param"
)

// Tolerances of the fused decoder's tests.
const (
	forwardTol = 1e-12 // float64 against the reference: summation order only
	gradTol    = 1e-5  // relative gap to float64 central differences (four steps of rounding in the loss)
)

type seqCase struct {
	steps, rows, srcLen, emb, mem, hid, attn int
	lengths                                  []int
	feeding                                  bool // input feeding
}

// in is the width of the LSTM input.
func (c seqCase) in() int {
	if c.feeding {
		return c.emb + c.mem + c.hid
	}
	return c.emb + c.mem
}

// seqInputs are the float64 inputs of one fused-decoder case.
type seqInputs struct {
	emb, fwd, bwd []float64
	w             Weights[float64]
	scorer        align.Scorer[float64]
}

func (c seqCase) inputs(t *testing.T, rng *rand.Rand, attention string) seqInputs {
	half, h := c.mem/2, c.hid
	scale := 1 / math.Sqrt(float64(h))
	scorer, err := align.New(attention, param.NewSet[float64](), align.Config{MemDim: c.mem, QueryDim: h, Dim: c.attn, Window: 2, Heads: 2, Temperature: 1})
	if err != nil {
		t.Fatal(err)
	}
	scorer.Init(rng)
	in := seqInputs{
		emb: gradcheck.Random(rng, c.steps*c.rows*c.emb, 1),
		fwd: gradcheck.Random(rng, (c.srcLen+2)*c.rows*half, 0.5),
		bwd: gradcheck.Random(rng, (c.srcLen+2)*c.rows*half, 0.5),
		w: Weights[float64]{
			BridgeHW: gradcheck.Random(rng, c.mem*h, scale), BridgeHB: gradcheck.Random(rng, h, scale),
			BridgeCW: gradcheck.Random(rng, c.mem*h, scale), BridgeCB: gradcheck.Random(rng, h, scale),
			InputW: gradcheck.Random(rng, 4*c.in()*h, scale), HiddenW: gradcheck.Random(rng, 4*h*h, scale),
			Bias: gradcheck.Random(rng, 4*h, scale),
		},
		scorer: scorer,
	}
	if c.feeding {
		in.w.FeedW, in.w.FeedB = gradcheck.Random(rng, (h+c.mem)*h, scale), gradcheck.Random(rng, h, scale)
	}
	return in
}

// seqRef is the plain reference of Seq.Forward with the additive score (the other scores have their own
// references in align): every sum written out as a loop.
func seqRef(c seqCase, in seqInputs) []float64 {
	T, B, S, E, M, H, A := c.steps, c.rows, c.srcLen, c.emb, c.mem, c.hid, c.attn
	half := M / 2
	sigmoid := func(v float64) float64 { return 1 / (1 + math.Exp(-v)) }
	// memory[r][i] = [fwd_i ; bwd_i]; the final states are the packed rows S and S+1.
	packed := func(t, r, k int) float64 {
		if k < half {
			return in.fwd[(t*B+r)*half+k]
		}
		return in.bwd[(t*B+r)*half+k-half]
	}
	h, c0 := make([]float64, B*H), make([]float64, B*H)
	for r := 0; r < B; r++ {
		for j := 0; j < H; j++ {
			sh, sc := in.w.BridgeHB[j], in.w.BridgeCB[j]
			for k := 0; k < M; k++ {
				sh += packed(S, r, k) * in.w.BridgeHW[k*H+j]
				sc += packed(S+1, r, k) * in.w.BridgeCW[k*H+j]
			}
			h[r*H+j], c0[r*H+j] = math.Tanh(sh), math.Tanh(sc)
		}
	}
	cell := c0
	mlp := in.scorer.(*align.Additive[float64])
	out := make([]float64, T*B*(H+M))
	feed := make([]float64, B*H) // f_{t-1}, 0 at the start
	for t := 0; t < T; t++ {
		hNew := make([]float64, B*H)
		for r := 0; r < B; r++ {
			// e_i = vᵀ tanh(W_s s + b_s + W_h h_i), masked softmax, context
			weights := make([]float64, S)
			for i := 0; i < c.lengths[r]; i++ {
				for a := 0; a < A; a++ {
					z := mlp.QueryB.Data[a]
					for k := 0; k < H; k++ {
						z += h[r*H+k] * mlp.QueryW.Data[k*A+a]
					}
					for k := 0; k < M; k++ {
						z += packed(i, r, k) * mlp.MemW.Data[k*A+a]
					}
					weights[i] += mlp.V.Data[a] * math.Tanh(z)
				}
			}
			maxv := math.Inf(-1)
			for i := 0; i < c.lengths[r]; i++ {
				maxv = math.Max(maxv, weights[i])
			}
			var sum float64
			for i := 0; i < c.lengths[r]; i++ {
				weights[i] = math.Exp(weights[i] - maxv)
				sum += weights[i]
			}
			for i := range weights {
				if i < c.lengths[r] {
					weights[i] /= sum
				} else {
					weights[i] = 0
				}
			}
			ctx := make([]float64, M)
			for k := range ctx {
				for i := 0; i < S; i++ {
					ctx[k] += weights[i] * packed(i, r, k)
				}
			}
			// LSTM over [emb ; ctx (; f_{t-1})] and s_{t-1}
			x := append(append([]float64{}, in.emb[(t*B+r)*E:(t*B+r+1)*E]...), ctx...)
			if c.feeding {
				x = append(x, feed[r*H:(r+1)*H]...)
			}
			var gate [4][]float64
			for g := 0; g < 4; g++ {
				gate[g] = make([]float64, H)
				for j := 0; j < H; j++ {
					v := in.w.Bias[g*H+j]
					for k := range x {
						v += x[k] * in.w.InputW[(g*len(x)+k)*H+j]
					}
					for k := 0; k < H; k++ {
						v += h[r*H+k] * in.w.HiddenW[(g*H+k)*H+j]
					}
					gate[g][j] = v
				}
			}
			for j := 0; j < H; j++ {
				cell[r*H+j] = sigmoid(gate[1][j])*cell[r*H+j] + sigmoid(gate[0][j])*math.Tanh(gate[2][j])
				hNew[r*H+j] = sigmoid(gate[3][j]) * math.Tanh(cell[r*H+j])
			}
			o := out[(t*B+r)*(H+M) : (t*B+r+1)*(H+M)]
			copy(o[:H], hNew[r*H:(r+1)*H])
			copy(o[H:], ctx)
			if c.feeding {
				// f_t = tanh([s_t ; c_t] A + a) replaces s_t
				for j := 0; j < H; j++ {
					v := in.w.FeedB[j]
					for k := 0; k < H+M; k++ {
						v += o[k] * in.w.FeedW[k*H+j]
					}
					feed[r*H+j] = math.Tanh(v)
				}
				copy(o[:H], feed[r*H:(r+1)*H])
			}
		}
		h = hNew
	}
	return out
}

func (c seqCase) run(in seqInputs) ([]float64, *Seq[float64]) {
	seq := NewSeq[float64](c.steps, c.rows, c.srcLen, c.emb, c.mem, c.hid, in.scorer, kernels.NewArena[float64](), "t")
	seq.Lengths = c.lengths
	seq.Feeding = c.feeding
	out := make([]float64, c.steps*c.rows*(c.hid+c.mem))
	seq.Forward(in.emb, in.fwd, in.bwd, in.w, out)
	return out, seq
}

func TestSeqForwardMatchesReference(t *testing.T) {
	for name, c := range map[string]seqCase{
		"odd B=3 S=5 H=7":           {steps: 4, rows: 3, srcLen: 5, emb: 6, mem: 8, hid: 7, attn: 6, lengths: []int{5, 1, 3}},
		"H=512":                     {steps: 2, rows: 2, srcLen: 3, emb: 4, mem: 6, hid: 512, attn: 8, lengths: []int{3, 2}},
		"input feeding B=3 S=5 H=7": {steps: 4, rows: 3, srcLen: 5, emb: 6, mem: 8, hid: 7, attn: 6, lengths: []int{5, 1, 3}, feeding: true},
		"input feeding H=512":       {steps: 3, rows: 2, srcLen: 3, emb: 4, mem: 6, hid: 512, attn: 8, lengths: []int{3, 2}, feeding: true},
	} {
		t.Run(name, func(t *testing.T) {
			in := c.inputs(t, rand.New(rand.NewPCG(1, uint64(c.hid))), "additive")
			got, _ := c.run(in)
			gradcheck.Close(t, "out", got, seqRef(c, in), forwardTol)
		})
	}
}

// TestSeqBackwardMatchesFiniteDifferences differentiates Σ R ⊙ out through the fused decoder, with every score
// function, by hand and by central differences.
func TestSeqBackwardMatchesFiniteDifferences(t *testing.T) {
	type variant struct {
		attention string
		feeding   bool
	}
	var variants []variant
	for _, attention := range align.Names() {
		variants = append(variants, variant{attention, false})
	}
	variants = append(variants, variant{"additive", true}, variant{"multi-head", true})
	for _, v := range variants {
		attention := v.attention
		t.Run(fmt.Sprintf("%s input_feeding=%v", attention, v.feeding), func(t *testing.T) {
			c := seqCase{steps: 4, rows: 3, srcLen: 5, emb: 6, mem: 8, hid: 7, attn: 6, lengths: []int{5, 1, 3}, feeding: v.feeding}
			rng := rand.New(rand.NewPCG(2, 3))
			in := c.inputs(t, rng, attention)
			dOut := gradcheck.Random(rng, c.steps*c.rows*(c.hid+c.mem), 1)
			loss := func() float64 {
				out, _ := c.run(in)
				return gradcheck.Dot(out, dOut)
			}
			_, seq := c.run(in)
			dEmb, dFwd, dBwd := make([]float64, len(in.emb)), make([]float64, len(in.fwd)), make([]float64, len(in.bwd))
			dw := Weights[float64]{
				BridgeHW: make([]float64, len(in.w.BridgeHW)), BridgeHB: make([]float64, len(in.w.BridgeHB)),
				BridgeCW: make([]float64, len(in.w.BridgeCW)), BridgeCB: make([]float64, len(in.w.BridgeCB)),
				InputW: make([]float64, len(in.w.InputW)), HiddenW: make([]float64, len(in.w.HiddenW)), Bias: make([]float64, len(in.w.Bias)),
			}
			if c.feeding {
				dw.FeedW, dw.FeedB = make([]float64, len(in.w.FeedW)), make([]float64, len(in.w.FeedB))
			}
			var dAttn [][]float64
			for _, p := range in.scorer.Params() {
				dAttn = append(dAttn, make([]float64, len(p.Data)))
			}
			seq.Backward(in.emb, in.w, dOut, dEmb, dFwd, dBwd, dw, dAttn)
			tensors := []gradcheck.Tensor{
				{Name: "emb", X: in.emb, Grad: dEmb}, {Name: "fwd", X: in.fwd, Grad: dFwd}, {Name: "bwd", X: in.bwd, Grad: dBwd},
				{Name: "bridge.h.w", X: in.w.BridgeHW, Grad: dw.BridgeHW}, {Name: "bridge.h.b", X: in.w.BridgeHB, Grad: dw.BridgeHB},
				{Name: "bridge.c.w", X: in.w.BridgeCW, Grad: dw.BridgeCW}, {Name: "bridge.c.b", X: in.w.BridgeCB, Grad: dw.BridgeCB},
				{Name: "dec.w_ih", X: in.w.InputW, Grad: dw.InputW}, {Name: "dec.w_hh", X: in.w.HiddenW, Grad: dw.HiddenW},
				{Name: "dec.b", X: in.w.Bias, Grad: dw.Bias},
			}
			if c.feeding {
				tensors = append(tensors, gradcheck.Tensor{Name: "dec.feed.w", X: in.w.FeedW, Grad: dw.FeedW},
					gradcheck.Tensor{Name: "dec.feed.b", X: in.w.FeedB, Grad: dw.FeedB})
			}
			for i, p := range in.scorer.Params() {
				tensors = append(tensors, gradcheck.Tensor{Name: p.Name, X: p.Data, Grad: dAttn[i]})
			}
			gradcheck.Check(t, loss, tensors, 30, rng, gradTol)
		})
	}
}
