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
	layers                                   int  // decoder layers (0: 1), with dropout masks between them
	after                                    bool // Config.AttendAfterInput
}

// seqInputs are the float64 inputs of one fused-decoder case: a decoder with random weights, its target
// embeddings, the packed encoder outputs and the dropout masks between its layers.
type seqInputs struct {
	d             *Decoder[float64]
	set           *param.Set[float64]
	emb, fwd, bwd []float64
	masks         [][]float64
}

func (c seqCase) inputs(t *testing.T, rng *rand.Rand, attention string) seqInputs {
	set := param.NewSet[float64]()
	d, err := New(set, Config{Vocab: 5, Emb: c.emb, Hidden: c.hid, MemDim: c.mem, Attn: c.attn, Attention: attention, Window: 2, Heads: 2,
		Temperature: 1, InputFeeding: c.feeding, Layers: c.layers, AttendAfterInput: c.after}, nil)
	if err != nil {
		t.Fatal(err)
	}
	set.Pack()
	for _, p := range set.List() { // weights of the scale of an initialised model, biases not zero
		copy(p.Data, gradcheck.Random(rng, len(p.Data), 1/math.Sqrt(float64(c.hid))))
	}
	half := c.mem / 2
	in := seqInputs{d: d, set: set,
		emb: gradcheck.Random(rng, c.steps*c.rows*c.emb, 1),
		fwd: gradcheck.Random(rng, (c.srcLen+2)*c.rows*half, 0.5),
		bwd: gradcheck.Random(rng, (c.srcLen+2)*c.rows*half, 0.5),
	}
	for range d.Upper {
		mask := make([]float64, c.steps*c.rows*(c.hid+c.mem))
		for i := range mask {
			if rng.Float64() < 0.8 {
				mask[i] = 1 / 0.8
			}
		}
		in.masks = append(in.masks, mask)
	}
	return in
}

// seqRef is the plain reference of the fused decoder's forward pass with the additive score (the other scores
// have their own references in align), one layer, in either order of attention and LSTM: every sum written out
// as a loop.
func seqRef(c seqCase, in seqInputs) []float64 {
	T, B, S, E, M, H, A := c.steps, c.rows, c.srcLen, c.emb, c.mem, c.hid, c.attn
	d := in.d
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
			sh, sc := d.BridgeHB.Data[j], d.BridgeCB.Data[j]
			for k := 0; k < M; k++ {
				sh += packed(S, r, k) * d.BridgeHW.Data[k*H+j]
				sc += packed(S+1, r, k) * d.BridgeCW.Data[k*H+j]
			}
			h[r*H+j], c0[r*H+j] = math.Tanh(sh), math.Tanh(sc)
		}
	}
	cell := c0
	mlp := d.Attn.(*align.Soft[float64]).Scorer.(*align.Additive[float64])
	out := make([]float64, T*B*(H+M))
	feed := make([]float64, B*H) // f_{t-1}, 0 at the start
	for t := 0; t < T; t++ {
		hNew := make([]float64, B*H)
		for r := 0; r < B; r++ {
			// e_i = vᵀ tanh(W_s q + b_s + W_h h_i), masked softmax, context, for the query q (B×H, row r)
			attend := func(q []float64) []float64 {
				weights := make([]float64, S)
				for i := 0; i < c.lengths[r]; i++ {
					for a := 0; a < A; a++ {
						z := mlp.QueryB.Data[a]
						for k := 0; k < H; k++ {
							z += q[r*H+k] * mlp.QueryW.Data[k*A+a]
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
				return ctx
			}
			// LSTM over [emb ; ctx (; f_{t-1})] and s_{t-1}, the context from s_{t-1}; or, attending after the
			// input, over [emb (; f_{t-1})], the context from s_t
			x := append([]float64{}, in.emb[(t*B+r)*E:(t*B+r+1)*E]...)
			var ctx []float64
			if !c.after {
				ctx = attend(h)
				x = append(x, ctx...)
			}
			if c.feeding {
				x = append(x, feed[r*H:(r+1)*H]...)
			}
			var gate [4][]float64
			for g := 0; g < 4; g++ {
				gate[g] = make([]float64, H)
				for j := 0; j < H; j++ {
					v := d.Bias.Data[g*H+j]
					for k := range x {
						v += x[k] * d.InputW.Data[(g*len(x)+k)*H+j]
					}
					for k := 0; k < H; k++ {
						v += h[r*H+k] * d.HiddenW.Data[(g*H+k)*H+j]
					}
					gate[g][j] = v
				}
			}
			for j := 0; j < H; j++ {
				cell[r*H+j] = sigmoid(gate[1][j])*cell[r*H+j] + sigmoid(gate[0][j])*math.Tanh(gate[2][j])
				hNew[r*H+j] = sigmoid(gate[3][j]) * math.Tanh(cell[r*H+j])
			}
			if c.after {
				ctx = attend(hNew)
			}
			o := out[(t*B+r)*(H+M) : (t*B+r+1)*(H+M)]
			copy(o[:H], hNew[r*H:(r+1)*H])
			copy(o[H:], ctx)
			if c.feeding {
				// f_t = tanh([s_t ; c_t] A + a) replaces s_t
				for j := 0; j < H; j++ {
					v := d.FeedB.Data[j]
					for k := 0; k < H+M; k++ {
						v += o[k] * d.FeedW.Data[k*H+j]
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

// run builds the fused decoder of c and runs its forward pass.
// backward runs tc's backward pass of dOut and returns in's inputs and the decoder's fused parameters with
// their gradients, for gradcheck.Check.
func (in seqInputs) backward(tc *teacher[float64], dOut []float64) []gradcheck.Tensor {
	dEmb, dFwd, dBwd := make([]float64, len(in.emb)), make([]float64, len(in.fwd)), make([]float64, len(in.bwd))
	grads := in.set.ZerosLike()
	tc.backward(dOut, dEmb, dFwd, dBwd, func(p *param.Tensor[float64]) []float64 { return grads.Get(p.Name).Data })
	tensors := []gradcheck.Tensor{{Name: "emb", X: in.emb, Grad: dEmb}, {Name: "fwd", X: in.fwd, Grad: dFwd}, {Name: "bwd", X: in.bwd, Grad: dBwd}}
	for _, p := range in.d.fusedParams() {
		tensors = append(tensors, gradcheck.Tensor{Name: p.Name, X: p.Data, Grad: grads.Get(p.Name).Data})
	}
	return tensors
}

func (c seqCase) run(in seqInputs) ([]float64, *teacher[float64]) {
	tc := &teacher[float64]{d: in.d, steps: c.steps, rows: c.rows, srcLen: c.srcLen, arena: kernels.NewArena[float64]()}
	tc.cache.masks = in.masks
	out := make([]float64, c.steps*c.rows*(c.hid+c.mem))
	tc.forward(in.emb, in.fwd, in.bwd, c.lengths, out)
	return out, tc
}

func TestFusedDecoderForwardMatchesReference(t *testing.T) {
	for name, c := range map[string]seqCase{
		"odd B=3 S=5 H=7":                {steps: 4, rows: 3, srcLen: 5, emb: 6, mem: 8, hid: 7, attn: 6, lengths: []int{5, 1, 3}},
		"H=512":                          {steps: 2, rows: 2, srcLen: 3, emb: 4, mem: 6, hid: 512, attn: 8, lengths: []int{3, 2}},
		"input feeding B=3 S=5 H=7":      {steps: 4, rows: 3, srcLen: 5, emb: 6, mem: 8, hid: 7, attn: 6, lengths: []int{5, 1, 3}, feeding: true},
		"input feeding H=512":            {steps: 3, rows: 2, srcLen: 3, emb: 4, mem: 6, hid: 512, attn: 8, lengths: []int{3, 2}, feeding: true},
		"attend after input B=3 S=5 H=7": {steps: 4, rows: 3, srcLen: 5, emb: 6, mem: 8, hid: 7, attn: 6, lengths: []int{5, 1, 3}, after: true},
		"attend after input, input feeding B=3 S=5 H=7": {steps: 4, rows: 3, srcLen: 5, emb: 6, mem: 8, hid: 7, attn: 6, lengths: []int{5, 1, 3},
			feeding: true, after: true},
	} {
		t.Run(name, func(t *testing.T) {
			in := c.inputs(t, rand.New(rand.NewPCG(1, uint64(c.hid))), "additive")
			got, _ := c.run(in)
			gradcheck.Close(t, "out", got, seqRef(c, in), forwardTol)
		})
	}
}

// TestFusedDecoderBackwardMatchesFiniteDifferences differentiates Σ R ⊙ out through the fused decoder, with
// every score function, input feeding, stacked layers (with dropout between them) and both orders of attention
// and LSTM, by hand and by central differences.
func TestFusedDecoderBackwardMatchesFiniteDifferences(t *testing.T) {
	type variant struct {
		attention string
		feeding   bool
		layers    int
		after     bool // Config.AttendAfterInput
	}
	var variants []variant
	for _, attention := range align.Names() {
		variants = append(variants, variant{attention, false, 1, false}, variant{attention, false, 1, true})
	}
	variants = append(variants, variant{"additive", true, 1, false}, variant{"multi-head", true, 1, false}, variant{"additive", false, 3, false},
		variant{"multi-head", true, 2, false}, variant{"additive", true, 1, true}, variant{"general", true, 3, true})
	for _, v := range variants {
		t.Run(fmt.Sprintf("%s input_feeding=%v layers=%d attend_after_input=%v", v.attention, v.feeding, v.layers, v.after), func(t *testing.T) {
			c := seqCase{steps: 4, rows: 3, srcLen: 5, emb: 6, mem: 8, hid: 7, attn: 6, lengths: []int{5, 1, 3}, feeding: v.feeding, layers: v.layers,
				after: v.after}
			rng := rand.New(rand.NewPCG(2, 3))
			in := c.inputs(t, rng, v.attention)
			dOut := gradcheck.Random(rng, c.steps*c.rows*(c.hid+c.mem), 1)
			loss := func() float64 {
				out, _ := c.run(in)
				return gradcheck.Dot(out, dOut)
			}
			_, tc := c.run(in)
			gradcheck.Check(t, loss, in.backward(tc, dOut), 30, rng, gradTol)
		})
	}
}
