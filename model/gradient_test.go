package model

import (
	"fmt"
	"github.com/attend-nmt/attend/align"
	"github.com/attend-nmt/attend/data"
	"math"
	"math/rand/v2"
	"testing"
)

// TestGradientsMatchFiniteDifferences checks the gradient of the token-averaged loss of a tiny model, for every
// parameter tensor, against central finite differences of the same graph's loss (float64, dropout on with masks
// held fixed, padding rows and short rows present), with and without label smoothing.
func TestGradientsMatchFiniteDifferences(t *testing.T) {
	for _, variant := range []struct {
		cell, attention string
		unfused         bool
		smoothing       float64
		feeding         bool
		selfAttention   int  // model.self_attention_layers (with 2 heads over the memory width 8)
		layers          int  // model.layers (0: 1)
		after           bool // model.attend_after_input
	}{{"lstm", "mlp", false, 0, false, 0, 0, false}, {"gru", "mlp", false, 0, false, 0, 0, false}, {"lstm", "mlp", true, 0, false, 0, 0, false},
		{"lstm", "mlp", false, 0.1, false, 0, 0, false}, {"lstm", "mlp", true, 0.1, false, 0, 0, false}, {"lstm", "cosine", false, 0, false, 0, 0, false},
		{"lstm", "cosine", true, 0, false, 0, 0, false}, {"lstm", "local", false, 0, false, 0, 0, false}, {"lstm", "local", true, 0, false, 0, 0, false},
		{"lstm", "multi-head", false, 0, false, 0, 0, false}, {"lstm", "multi-head", true, 0, false, 0, 0, false},
		{"lstm", "mlp", false, 0, true, 0, 0, false}, {"lstm", "mlp", true, 0, true, 0, 0, false},
		{"lstm", "mlp", false, 0, false, 1, 0, false}, {"lstm", "mlp", true, 0, false, 1, 0, false}, {"gru", "mlp", false, 0, false, 2, 0, false},
		{"lstm", "mlp", false, 0, false, 0, 3, false}, {"lstm", "mlp", true, 0, false, 0, 2, false}, {"gru", "mlp", false, 0, false, 0, 2, false},
		{"lstm", "mlp", false, 0, true, 0, 2, false},
		// Attending after the LSTM reads y_{t-1}: the fused op here, the unfused graph against it in
		// TestFusedGradientsEqualUnfused.
		{"lstm", "mlp", false, 0, false, 0, 0, true}, {"lstm", "local", false, 0, true, 0, 0, true}, {"lstm", "mlp", false, 0, true, 0, 2, true}} {
		cell := variant.cell
		t.Run(fmt.Sprintf("%s %s unfused=%v smoothing=%g input_feeding=%v self-attention=%d layers=%d attend_after_input=%v", cell, variant.attention,
			variant.unfused, variant.smoothing, variant.feeding, variant.selfAttention, variant.layers, variant.after), func(t *testing.T) {
			cfg := ModelConfig{Emb: 3, EncHidden: 4, DecHidden: 5, AttnDim: 3, Cell: cell, Attention: variant.attention, Window: 1, Heads: 3,
				Dropout: 0.25, InputFeeding: variant.feeding, Layers: variant.layers, AttendAfterInput: variant.after}
			if variant.selfAttention > 0 {
				cfg.SelfAttentionLayers, cfg.Heads = variant.selfAttention, 2
			}
			m := newTestModel[float64](t, cfg, 9, 11, 1)
			b := randomBatch(rand.New(rand.NewPCG(5, 6)), 9, 11, []int{3, 1, 2, 0}, []int{2, 3, 1, 0})
			tr := NewTrainer(m, 1e-3, 0, 2)
			tr.Unfused = variant.unfused
			tr.LabelSmoothing = variant.smoothing
			masks := func() *rand.Rand { return rand.New(rand.NewPCG(9, 9)) } // same dropout masks every run
			if _, err := tr.Gradients(b, masks()); err != nil {
				t.Fatal(err)
			}
			analytic := tr.Grads.ZerosLike()
			for i, g := range tr.Grads.List() {
				copy(analytic.List()[i].Data, g.Data)
			}
			lossAt := func() float64 {
				res, err := tr.Gradients(b, masks())
				if err != nil {
					t.Fatal(err)
				}
				return res.Loss
			}
			const eps = 1e-5
			pick := rand.New(rand.NewPCG(2, 2))
			worst := 0.0
			for i, p := range m.Params.List() {
				for n := 0; n < 12; n++ {
					j := pick.IntN(len(p.Data))
					orig := p.Data[j]
					p.Data[j] = orig + eps
					up := lossAt()
					p.Data[j] = orig - eps
					down := lossAt()
					p.Data[j] = orig
					numeric := (up - down) / (2 * eps)
					got := analytic.List()[i].Data[j]
					rel := math.Abs(got-numeric) / math.Max(math.Max(math.Abs(got), math.Abs(numeric)), 1e-3)
					worst = math.Max(worst, rel)
					if rel > 1e-5 {
						t.Errorf("%s[%d]: backprop %.10g, finite differences %.10g (rel. error %.2g)", p.Name, j, got, numeric, rel)
					}
				}
			}
			t.Logf("worst relative error %.2g", worst)
		})
	}
}

// TestGradientsDoNotAccumulateAcrossRuns guards against gorgonia's habit of summing gradients over runs: two
// identical steps must give identical gradients.
func TestGradientsDoNotAccumulateAcrossRuns(t *testing.T) {
	cfg := ModelConfig{Emb: 3, EncHidden: 4, DecHidden: 5, AttnDim: 3, Cell: "lstm", Attention: "mlp"}
	m := newTestModel[float64](t, cfg, 9, 11, 1)
	b := randomBatch(rand.New(rand.NewPCG(5, 6)), 9, 11, []int{3, 2}, []int{2, 3})
	tr := NewTrainer(m, 1e-3, 0, 2)
	var first []float64
	for run := 0; run < 3; run++ {
		if _, err := tr.Gradients(b, rand.New(rand.NewPCG(1, 1))); err != nil {
			t.Fatal(err)
		}
		var flat []float64
		for _, g := range tr.Grads.List() {
			flat = append(flat, g.Data...)
		}
		if run == 0 {
			first = flat
			continue
		}
		for i := range flat {
			if flat[i] != first[i] {
				t.Fatalf("run %d: gradient %d is %g, first run gave %g", run, i, flat[i], first[i])
			}
		}
	}
}

// TestFusedGradientsEqualUnfused compares the gradients of the fused ops with those of the same model built from
// gorgonia's own ops, at realistic widths (decoder 512) for the default score and at small ones for the others
// (hard attention with the same Gumbel noise in both), with dropout on, label smoothing and padding rows present.
func TestFusedGradientsEqualUnfused(t *testing.T) {
	cases := []ModelConfig{{Emb: 32, EncHidden: 256, DecHidden: 512, AttnDim: 64, Cell: "lstm", Attention: "mlp", Dropout: 0.2},
		{Emb: 32, EncHidden: 256, DecHidden: 512, AttnDim: 64, Cell: "lstm", Attention: "mlp", Dropout: 0.2, InputFeeding: true},
		{Emb: 8, EncHidden: 8, DecHidden: 12, AttnDim: 8, Cell: "lstm", Attention: "multi-head", Heads: 2, Dropout: 0.2, InputFeeding: true}}
	for _, name := range align.Names() {
		if name != "additive" {
			cases = append(cases, ModelConfig{Emb: 8, EncHidden: 8, DecHidden: 12, AttnDim: 8, Cell: "lstm", Attention: name,
				Window: 2, Heads: 2, Temperature: 0.5, Dropout: 0.2})
		}
	}
	// Self-attention layers: the fused op over the packed LSTM and GRU outputs.
	cases = append(cases,
		ModelConfig{Emb: 16, EncHidden: 128, DecHidden: 64, AttnDim: 32, Cell: "lstm", Attention: "mlp", Heads: 4, SelfAttentionLayers: 2, Dropout: 0.2},
		ModelConfig{Emb: 8, EncHidden: 8, DecHidden: 12, AttnDim: 8, Cell: "gru", Attention: "mlp", Heads: 2, SelfAttentionLayers: 1, Dropout: 0.2})
	// Stacked layers: the joins between encoder layers and the upper decoder layers' ops.
	cases = append(cases,
		ModelConfig{Emb: 32, EncHidden: 256, DecHidden: 512, AttnDim: 64, Cell: "lstm", Attention: "mlp", Dropout: 0.2, Layers: 2},
		ModelConfig{Emb: 8, EncHidden: 8, DecHidden: 12, AttnDim: 8, Cell: "lstm", Attention: "multi-head", Heads: 2, Dropout: 0.2, InputFeeding: true, Layers: 3})
	// Attending after the LSTM has read the previous word (model.attend_after_input).
	cases = append(cases,
		ModelConfig{Emb: 8, EncHidden: 8, DecHidden: 12, AttnDim: 8, Cell: "lstm", Attention: "mlp", Dropout: 0.2, InputFeeding: true, AttendAfterInput: true},
		ModelConfig{Emb: 8, EncHidden: 8, DecHidden: 12, AttnDim: 8, Cell: "lstm", Attention: "general", Dropout: 0.2, Layers: 3, AttendAfterInput: true})
	for _, cfg := range cases {
		t.Run(fmt.Sprintf("%s %s dec %d input_feeding=%v self-attention %d layers %d attend_after_input=%v", cfg.Cell, cfg.Attention, cfg.DecHidden, cfg.InputFeeding,
			cfg.SelfAttentionLayers, cfg.Layers, cfg.AttendAfterInput), func(t *testing.T) {
			m := newTestModel[float64](t, cfg, 30, 40, 3)
			b := randomBatch(rand.New(rand.NewPCG(4, 4)), 30, 40, []int{6, 2, 5, 0}, []int{4, 6, 1, 0})
			grads := func(unfused bool) (float64, []float64) {
				tr := NewTrainer(m, 1e-3, 0, 1)
				tr.Unfused = unfused
				tr.LabelSmoothing = 0.1
				res, err := tr.Gradients(b, rand.New(rand.NewPCG(7, 7)))
				if err != nil {
					t.Fatal(err)
				}
				var flat []float64
				for _, g := range tr.Grads.List() {
					flat = append(flat, g.Data...)
				}
				return res.Loss, flat
			}
			fusedLoss, fused := grads(false)
			plainLoss, plain := grads(true)
			if math.Abs(fusedLoss-plainLoss) > 1e-12*math.Abs(plainLoss) {
				t.Fatalf("loss: fused %.15g, unfused %.15g", fusedLoss, plainLoss)
			}
			for i := range fused {
				if math.Abs(fused[i]-plain[i]) > 1e-10*(1+math.Abs(plain[i])) {
					t.Fatalf("gradient %d: fused %.12g, unfused %.12g", i, fused[i], plain[i])
				}
			}
		})
	}
}

// Gradients computes the gradient of the batch's token-averaged loss into t.Grads and returns the loss, without
// updating the weights, as Step does before its update (dropout masks from rng).
func (t *Trainer[T]) Gradients(b *data.Batch, rng rand.Source) (StepResult, error) {
	tokens := b.TgtTokens()
	sum, guided, err := t.accumulate(b, rng, tokens, nil)
	if err != nil || tokens == 0 {
		return StepResult{}, err
	}
	return t.result(sum, guided, tokens), nil
}
