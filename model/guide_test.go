package model

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/attend-nmt/attend/align"
	"github.com/attend-nmt/attend/internal/gradcheck"
)

// guideLinks are the links of randomBatch's rows for source lengths {3, 1, 2, 0} and targets {2, 3, 1, 0}: a
// target word linked to two source words, one without links, and a row of one link.
func guideLinks(i int) []align.Link {
	return [][]align.Link{
		{{Src: 0, Tgt: 0}, {Src: 2, Tgt: 0}, {Src: 1, Tgt: 1}},
		{{Src: 0, Tgt: 2}},
		{{Src: 1, Tgt: 0}},
	}[i]
}

// guidedGradients returns the gradient of Loss + w·Guided of a tiny model's batch, the objective itself, and
// the step's result, through the fused or the unfused graph; full gives the model full-context alignment.
func guidedGradients(t *testing.T, attention string, after, full, unfused bool, w float64) (m *Seq2Seq[float64], grads []float64, objective func() float64, res StepResult) {
	cfg := ModelConfig{Emb: 3, EncHidden: 4, DecHidden: 5, AttnDim: 3, Cell: "lstm", Attention: attention, Dropout: 0.25, InputFeeding: true,
		AttendAfterInput: after, FullContextAlignment: full}
	m = newTestModel[float64](t, cfg, 9, 11, 1)
	if full {
		rng := rand.New(rand.NewPCG(3, 3))
		for i := range m.Decoder.AlignW.Data {
			m.Decoder.AlignW.Data[i] = rng.Float64() - 0.5
		}
	}
	b := randomBatch(rand.New(rand.NewPCG(5, 6)), 9, 11, []int{3, 1, 2, 0}, []int{2, 3, 1, 0})
	tr := NewTrainer(m, 1e-3, 0, 2)
	tr.Unfused = unfused
	tr.Guide, tr.GuideWeight = guideLinks, w
	masks := func() *rand.Rand { return rand.New(rand.NewPCG(9, 9)) } // same dropout masks every run
	res, err := tr.Gradients(b, masks())
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range tr.Grads.List() {
		grads = append(grads, g.Data...)
	}
	objective = func() float64 {
		r, err := tr.Gradients(b, masks())
		if err != nil {
			t.Fatal(err)
		}
		return r.Loss + w*r.Guided
	}
	return m, grads, objective, res
}

// TestGuidedGradientsMatchFiniteDifferencesAndTheGraph checks the gradient of the guided objective
// (cross-entropy + w · guided-alignment cross-entropy) against central finite differences, in the fused and the
// unfused graph, and the two graphs' losses and gradients against each other; with the query before and after
// the LSTM reads the previous word, and with the full-context alignment attention, whose own weight (AlignW)
// starts at 0 and is given random values here so that its gradient is checked away from that point.
func TestGuidedGradientsMatchFiniteDifferencesAndTheGraph(t *testing.T) {
	const w = 0.5
	for _, c := range []struct {
		attention string
		after     bool // model.attend_after_input
		full      bool // model.full_context_alignment
	}{{"mlp", false, false}, {"general", false, false}, {"mlp", true, false}, {"mlp", false, true}, {"mlp", true, true}, {"cosine", true, true}} {
		attention, after, full := c.attention, c.after, c.full
		t.Run(fmt.Sprintf("%s attend_after_input=%v full_context_alignment=%v", attention, after, full), func(t *testing.T) {
			m, fused, objective, fusedRes := guidedGradients(t, attention, after, full, false, w)
			_, graph, _, graphRes := guidedGradients(t, attention, after, full, true, w)
			if fusedRes.Guided <= 0 || math.Abs(fusedRes.Guided-graphRes.Guided) > 1e-9 || math.Abs(fusedRes.Loss-graphRes.Loss) > 1e-9 {
				t.Fatalf("fused loss %g guided %g, graph loss %g guided %g", fusedRes.Loss, fusedRes.Guided, graphRes.Loss, graphRes.Guided)
			}
			_, unguided, _, _ := guidedGradients(t, attention, after, full, false, 0)
			var gap, change float64
			for i := range fused {
				gap = math.Max(gap, math.Abs(fused[i]-graph[i]))
				change = math.Max(change, math.Abs(fused[i]-unguided[i]))
			}
			if gap > 1e-9 {
				t.Errorf("fused and graph gradients differ by up to %g", gap)
			}
			if change < 1e-4 {
				t.Errorf("the guided term changes the gradient by only %g", change)
			}
			var tensors []gradcheck.Tensor
			at := 0
			for _, p := range m.Params.List() {
				tensors = append(tensors, gradcheck.Tensor{Name: p.Name, X: p.Data, Grad: fused[at : at+len(p.Data)]})
				at += len(p.Data)
			}
			gradcheck.Check(t, objective, tensors, 8, rand.New(rand.NewPCG(2, 2)), 1e-5)
		})
	}
}

// TestForcedAlignmentIsWhatGuidedAlignmentTrains checks that the alignment attention read at inference
// (Decoder.TeacherForced with all, as align and translate --alignments read it) is the one guided alignment trains:
// its weights give, through align.GuideLoss, the guided loss of a training step without dropout, in the fused
// and the unfused graph; and that it differs from the decoder's own attention once AlignW is not zero.
func TestForcedAlignmentIsWhatGuidedAlignmentTrains(t *testing.T) {
	for _, after := range []bool{false, true} {
		cfg := ModelConfig{Emb: 3, EncHidden: 4, DecHidden: 5, AttnDim: 3, Cell: "lstm", Attention: "mlp", InputFeeding: true,
			AttendAfterInput: after, FullContextAlignment: true}
		m := newTestModel[float64](t, cfg, 9, 11, 1)
		rng := rand.New(rand.NewPCG(3, 3))
		for i := range m.Decoder.AlignW.Data {
			m.Decoder.AlignW.Data[i] = 2*rng.Float64() - 1
		}
		b := randomBatch(rand.New(rand.NewPCG(5, 6)), 9, 11, []int{3, 1, 2, 0}, []int{2, 3, 1, 0})
		f := m.Decoder.TeacherForced(m.Encode(b), b.SrcLengths, b.TgtIn, b.TgtOut, b.TgtLen, true)
		guide := make([]float64, b.TgtLen*b.Rows*b.SrcLen)
		tokens := 0
		for r := 0; r < b.Rows; r++ {
			if r < b.Real {
				align.FillGuide(guide, b.Rows, b.SrcLen, b.TgtLen, r, guideLinks(b.Index[r]))
			}
		}
		for _, y := range b.TgtOut {
			if y != 0 {
				tokens++
			}
		}
		want := align.GuideLoss(f.Alignment, guide) / float64(tokens)
		var gap float64
		for i := range f.Weights {
			gap = math.Max(gap, math.Abs(f.Weights[i]-f.Alignment[i]))
		}
		if gap < 1e-3 {
			t.Errorf("attend_after_input=%v: the alignment attention is the decoder's (gap %g)", after, gap)
		}
		for _, unfused := range []bool{false, true} {
			tr := NewTrainer(m, 1e-3, 0, 2)
			tr.Unfused = unfused
			tr.Guide, tr.GuideWeight = guideLinks, 1
			res, err := tr.Gradients(b, rand.New(rand.NewPCG(9, 9)))
			if err != nil {
				t.Fatal(err)
			}
			if math.Abs(res.Guided-want) > 1e-9 {
				t.Errorf("attend_after_input=%v unfused=%v: training's guided loss %.12g, the forced alignment's %.12g", after, unfused, res.Guided, want)
			}
		}
	}
}
