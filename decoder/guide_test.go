package decoder

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/attend-nmt/attend/align"
	"github.com/attend-nmt/attend/internal/gradcheck"
)

// guideCase is the gold of guided alignment for seqCase{steps: 4, rows: 3, lengths: {5, 1, 3}}: row 0 has a
// target word linked to two source words and one without links, row 1 one link, row 2 none past step 1.
func guideCase(c seqCase) []float64 {
	guide := make([]float64, c.steps*c.rows*c.srcLen)
	rows := [][]align.Link{
		{{Src: 0, Tgt: 0}, {Src: 2, Tgt: 0}, {Src: 4, Tgt: 1}, {Src: 1, Tgt: 3}},
		{{Src: 0, Tgt: 2}},
		{{Src: 2, Tgt: 0}, {Src: 1, Tgt: 1}},
	}
	for r, links := range rows {
		align.FillGuide(guide, c.rows, c.srcLen, c.steps, r, links)
	}
	return guide
}

// TestFusedDecoderGuidedBackwardMatchesFiniteDifferences differentiates Σ R ⊙ out + w·GuideLoss(weights) through
// the fused decoder, for every score function whose weights can be guided, attending before and after the LSTM
// reads its input, by hand and by central differences: the guided gradient −w g/(a+ε) goes through each
// attention's softmax backward.
func TestFusedDecoderGuidedBackwardMatchesFiniteDifferences(t *testing.T) {
	const w = 0.7
	for _, attention := range align.Names() {
		if align.Builtin[float64]().Guidable(attention) != nil {
			continue
		}
		for _, after := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s attend_after_input=%v", attention, after), func(t *testing.T) {
				c := seqCase{steps: 4, rows: 3, srcLen: 5, emb: 6, mem: 8, hid: 7, attn: 6, lengths: []int{5, 1, 3}, feeding: true, after: after}
				rng := rand.New(rand.NewPCG(4, 5))
				in := c.inputs(t, rng, attention)
				guide := guideCase(c)
				dOut := gradcheck.Random(rng, c.steps*c.rows*(c.hid+c.mem), 1)
				loss := func() float64 {
					out, tc := c.run(in)
					return gradcheck.Dot(out, dOut) + w*align.GuideLoss(tc.cache.weights, guide)
				}
				_, tc := c.run(in)
				if g := align.GuideLoss(tc.cache.weights, guide); g <= 0 {
					t.Fatalf("guided loss %g, want > 0", g)
				}
				tc.cache.guide, tc.cache.guideScale = guide, w
				gradcheck.Check(t, loss, in.backward(tc, dOut), 30, rng, gradTol)
			})
		}
	}
}
