package decoder

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/attend-nmt/attend/internal/gradcheck"
	"github.com/attend-nmt/attend/kernels"
)

// TestFusedDecoderOnPackedWeights checks the decoder of a training worker's arena (SingleThreaded), whose gate
// products, forward and backward, run on weights packed once a pass (kernels.PackedGemm) where AVX-512 runs: its
// outputs and gradients are as close to float64's as those of the same decoder on Gemm's BLAS (within 4 times
// their worst error, and a floor of float32's rounding of the largest value), and both gate products did run on
// the packed weights.
func TestFusedDecoderOnPackedWeights(t *testing.T) {
	if !kernels.Float32Products().PacksWeights() {
		t.Skip("no AVX-512 here")
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
			blasOut, blasGrads, _ := c.runFloat32(t, in, dOut, nil)
			muls, err := kernels.NewMultipliers(kernels.Float32Products(), 2) // two workers: products on one thread
			if err != nil {
				t.Fatal(err)
			}
			packedOut, packedGrads, packed := c.runFloat32(t, in, dOut, muls[0])
			for _, p := range []kernels.WeightProduct{packed.buf.gateProduct, packed.buf.gateProductT} {
				if _, ok := p.(*kernels.PackedGemm); !ok {
					t.Fatalf("a gate product ran on %T, not on packed weights", p)
				}
			}
			check := func(name string, blas, got []float32, want []float64) {
				eBLAS, _ := worstError(blas, want)
				e, scale := worstError(got, want)
				t.Logf("%s: worst error on BLAS %.3g, on packed weights %.3g (largest value %.3g)", name, eBLAS, e, scale)
				if e > 4*eBLAS+scale*0x1p-22 {
					t.Errorf("%s: off float64 by %.3g on packed weights, by %.3g on BLAS (largest value %.3g)", name, e, eBLAS, scale)
				}
			}
			check("out", blasOut, packedOut, want)
			for _, g := range wantGrads {
				check("d"+g.Name, blasGrads[g.Name], packedGrads[g.Name], g.Grad)
			}
		})
	}
}
