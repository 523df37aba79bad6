package decoder

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/attend-nmt/attend/internal/gradcheck"
	"github.com/attend-nmt/attend/kernels"
	"github.com/attend-nmt/attend/param"
)

// TestFusedDecoderInBF16x3 runs the fused decoder in float32 with its gate products and weight gradients on AMX split
// in bfloat16x3 (a kernels.Multiplier of bfloat16x3 products: AMXGemm, AMXProduct) and with float32 products, forward
// and backward, against the same decoder in float64: the AMX run must stay within 1e-4 of float64's outputs and
// gradients (each product's terms off by a relative 2^-16 at most; a single bfloat16 rounding, 2^-9, would not pass),
// within 30 times the float32 run's worst error plus 3·2^-17 (a split term's own error, which a product on AMX carries
// whatever its length: the weight gradients sum over the 15 rows of every step of the first case, where float32's
// summation errs by a few 2^-24 only), and differ from the float32 run (the gates did run on AMX). Widths of 64 and
// more make the products whole and partial AMX blocks.
func TestFusedDecoderInBF16x3(t *testing.T) {
	if _, err := kernels.Choose(kernels.PrecisionBF16x3); err != nil {
		t.Skip(err)
	}
	for _, c := range []seqCase{
		{steps: 5, rows: 3, srcLen: 6, emb: 40, mem: 48, hid: 64, attn: 16, lengths: []int{6, 2, 4}},
		{steps: 4, rows: 33, srcLen: 5, emb: 24, mem: 40, hid: 70, attn: 12, lengths: repeatLengths(33, 5), feeding: true},
	} {
		t.Run(fmt.Sprintf("B=%d H=%d feeding=%v", c.rows, c.hid, c.feeding), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(4, 5))
			in := c.inputs(t, rng, "additive")
			want, tc := c.run(in)
			dOut := gradcheck.Random(rng, len(want), 1)
			wantGrads := in.backward(tc, dOut)
			var outs [2][]float32
			var grads [2]map[string][]float32
			for i, split := range []bool{false, true} {
				var mul *kernels.Multiplier
				if split {
					products, err := kernels.Choose(kernels.PrecisionBF16x3)
					if err != nil {
						t.Fatal(err)
					}
					muls, err := kernels.NewMultipliers(products, 1)
					if err != nil {
						t.Fatal(err)
					}
					mul = muls[0]
				}
				outs[i], grads[i], _ = c.runFloat32(t, in, dOut, mul)
			}
			worst := func(name string, got []float32, want []float64) (float64, float64) {
				err, scale := worstError(got, want)
				return err / max(scale, 1e-30), scale
			}
			check := func(name string, f32, amx []float32, want []float64) {
				e32, _ := worst(name, f32, want)
				eAMX, scale := worst(name, amx, want)
				t.Logf("%s: worst error of float32 %.3g, of bfloat16x3 %.3g (of the largest value, %.3g)", name, e32, eAMX, scale)
				if eAMX > 1e-4 || eAMX > 30*e32+3.0/(1<<17) {
					t.Errorf("%s: bfloat16x3 off float64 by %.3g of the largest value, float32 by %.3g", name, eAMX, e32)
				}
			}
			check("out", outs[0], outs[1], want)
			same := true
			for j := range outs[0] {
				same = same && outs[0][j] == outs[1][j]
			}
			if same {
				t.Fatal("the AMX run gave float32's outputs: its gates did not run on AMX")
			}
			for _, g := range wantGrads {
				check("d"+g.Name, grads[0][g.Name], grads[1][g.Name], g.Grad)
			}
		})
	}
}

// worstError is the largest distance of got from want, and the largest magnitude in want.
func worstError(got []float32, want []float64) (err, scale float64) {
	for j, w := range want {
		scale = max(scale, math.Abs(w))
		err = max(err, math.Abs(float64(got[j])-w))
	}
	return err, scale
}

// repeatLengths returns n source lengths cycling from srcLen down to 1.
func repeatLengths(n, srcLen int) []int {
	lengths := make([]int, n)
	for i := range lengths {
		lengths[i] = srcLen - i%srcLen
	}
	return lengths
}

// runFloat32 runs c's decoder with in's weights and inputs in float32 on arena (whose settings choose the gates'
// products), and returns the outputs and the gradients of Σ dOut ⊙ out by name, as backward names them: emb,
// fwd, bwd and the decoder's fused parameters; and the teacher that ran them.
func (c seqCase) runFloat32(t *testing.T, in seqInputs, dOut []float64, mul *kernels.Multiplier) ([]float32, map[string][]float32, *teacher[float32]) {
	set := param.NewSet[float32]()
	d, err := New(set, in.d.Cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	set.Pack()
	for _, p := range set.List() {
		for i, v := range in.set.Get(p.Name).Data {
			p.Data[i] = float32(v)
		}
	}
	to32 := func(x []float64) []float32 {
		y := make([]float32, len(x))
		for i, v := range x {
			y[i] = float32(v)
		}
		return y
	}
	tc := &teacher[float32]{d: d, steps: c.steps, rows: c.rows, srcLen: c.srcLen, arena: kernels.NewArena[float32](), mul: mul}
	emb, fwd, bwd := to32(in.emb), to32(in.fwd), to32(in.bwd)
	out := make([]float32, c.steps*c.rows*(c.hid+c.mem))
	tc.forward(emb, fwd, bwd, c.lengths, out)
	dEmb, dFwd, dBwd := make([]float32, len(emb)), make([]float32, len(fwd)), make([]float32, len(bwd))
	grads := set.ZerosLike()
	tc.backward(to32(dOut), dEmb, dFwd, dBwd, func(p *param.Tensor[float32]) []float32 { return grads.Get(p.Name).Data })
	byName := map[string][]float32{"emb": dEmb, "fwd": dFwd, "bwd": dBwd}
	for _, p := range d.fusedParams() {
		byName[p.Name] = grads.Get(p.Name).Data
	}
	return out, byName, tc
}
