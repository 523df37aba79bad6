package model

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/attend-nmt/attend/data"
	"github.com/attend-nmt/attend/decoder"
)

// randomSources are source sentences of from to to words (one of each length) of random ids 4..19, drawn from
// the PCG stream (seed, seed).
func randomSources(seed uint64, from, to int) []data.Example {
	rng := rand.New(rand.NewPCG(seed, seed))
	var examples []data.Example
	for n := from; n <= to; n++ {
		src := make([]int, n)
		for i := range src {
			src[i] = 4 + rng.IntN(16)
		}
		examples = append(examples, data.Example{Src: src})
	}
	return examples
}

// beamTestBatch is one batch of seven random source sentences of 1 to 7 words, and the sentences themselves.
func beamTestBatch() (data.Batch, []data.Example) {
	examples := randomSources(8, 1, 7)
	return data.MakeBatches(examples, data.BatchOptions{BatchSize: len(examples)}, nil)[0], examples
}

var beamTestConfig = ModelConfig{Emb: 8, EncHidden: 8, DecHidden: 12, AttnDim: 6, Cell: "lstm", Attention: "mlp"}

// beamTestConfigs are beamTestConfig without and with input feeding, and with input feeding and three layers,
// whose extra states the beam must reorder, the last also attending after the LSTM reads the previous word.
func beamTestConfigs() map[string]ModelConfig {
	feeding := beamTestConfig
	feeding.InputFeeding = true
	stacked := feeding
	stacked.Layers = 3
	after := stacked
	after.AttendAfterInput = true
	return map[string]ModelConfig{"plain": beamTestConfig, "input feeding": feeding, "input feeding, 3 layers": stacked,
		"input feeding, 3 layers, attending after the input": after}
}

func beam(t *testing.T, m *Seq2Seq[float64], b *data.Batch, opts decoder.BeamOptions) [][]decoder.Scored {
	t.Helper()
	hyps, err := beamOf(m, b, opts)
	if err != nil {
		t.Fatal(err)
	}
	return hyps[:b.Real]
}

// TestBeamWidthOneIsGreedy requires the same words, end and attention, bit for bit, from a beam of 1 as from
// greedy search, on random models whose sentences stop at different steps or run into the limit.
func TestBeamWidthOneIsGreedy(t *testing.T) {
	batch, _ := beamTestBatch()
	for seed := uint64(1); seed <= 6; seed++ {
		cfg := beamTestConfig
		cfg.InputFeeding = seed%2 == 0  // and with input feeding, whose state greedy's compaction moves
		cfg.AttendAfterInput = seed > 4 // and attending after the LSTM reads the previous word
		m := newTestModel[float64](t, cfg, 20, 6, seed)
		greedy := m.Greedy(&batch, 9)
		beamed := beam(t, m, &batch, decoder.BeamOptions{Width: 1, MaxLen: 9})
		for r, g := range greedy {
			h := beamed[r][0]
			if !slices.Equal(g.Tokens, h.Tokens) || g.Finished != h.Finished || len(g.Attention) != len(h.Attention) {
				t.Fatalf("seed %d row %d: greedy %v (finished %v), beam 1 %v (finished %v)", seed, r, g.Tokens, g.Finished, h.Tokens, h.Finished)
			}
			for s := range g.Attention {
				if !slices.Equal(g.Attention[s], h.Attention[s]) {
					t.Fatalf("seed %d row %d step %d: attention %v, beam 1 %v", seed, r, s, g.Attention[s], h.Attention[s])
				}
			}
		}
	}
}

// TestBeamHypothesesMatchForcedRescoring feeds each n-best hypothesis back through the decoder by teacher
// forcing: the attention rows kept through the beam must be the forced pass's, and LogProb the sum of the
// forced log-probabilities of its words (and </s>); Score must follow from LogProb by the penalties, and the
// list must be sorted by it.
func TestBeamHypothesesMatchForcedRescoring(t *testing.T) {
	for name, cfg := range beamTestConfigs() {
		t.Run(name, func(t *testing.T) { testBeamMatchesForcedRescoring(t, cfg) })
	}
}

func testBeamMatchesForcedRescoring(t *testing.T, cfg ModelConfig) {
	batch, examples := beamTestBatch()
	m := newTestModel[float64](t, cfg, 20, 6, 3)
	opts := decoder.BeamOptions{Width: 4, NBest: 4, MaxLen: 9, Alpha: 0.6, Beta: 0.2}
	hyps := beam(t, m, &batch, opts)
	checked := 0
	for r, list := range hyps {
		if len(list) != opts.NBest {
			t.Fatalf("row %d: %d hypotheses, want %d", r, len(list), opts.NBest)
		}
		for i, h := range list {
			if i > 0 && h.Score > list[i-1].Score {
				t.Fatalf("row %d: n-best not sorted: %v after %v", r, h.Score, list[i-1].Score)
			}
			src := examples[batch.Index[r]].Src
			one := data.MakeBatches([]data.Example{{Src: src}}, data.BatchOptions{}, nil)[0]
			tgtIn := append([]int{data.BOSID}, h.Tokens...)
			steps := len(h.Tokens)
			if h.Finished {
				steps++
			} else {
				tgtIn = tgtIn[:steps]
			}
			f := m.Decoder.TeacherForced(m.Encode(&one), one.SrcLengths, tgtIn, nil, steps, false)
			logits, weights := f.Logits, f.Weights
			if len(h.Attention) != steps {
				t.Fatalf("row %d hyp %d: %d attention rows for %d steps", r, i, len(h.Attention), steps)
			}
			v, logProb := m.TgtVocab.Size(), 0.0
			for s := 0; s < steps; s++ {
				if len(h.Attention[s]) != len(src) {
					t.Fatalf("row %d hyp %d step %d: %d weights for %d source words", r, i, s, len(h.Attention[s]), len(src))
				}
				for j, w := range h.Attention[s] {
					if math.Abs(float64(w)-weights[s*len(src)+j]) > 1e-6 {
						t.Fatalf("row %d hyp %d step %d word %d: beam kept %v, forced %v", r, i, s, j, w, weights[s*len(src)+j])
					}
				}
				next := data.EOSID
				if s < len(h.Tokens) {
					next = h.Tokens[s]
				}
				row := logits[s*v : (s+1)*v]
				logProb += row[next] - logSumExp(row)
			}
			if math.Abs(logProb-h.LogProb) > 1e-9 {
				t.Fatalf("row %d hyp %d: log p %v, forced %v", r, i, h.LogProb, logProb)
			}
			want := logProb/decoder.LengthPenalty(steps, opts.Alpha) + decoder.CoveragePenalty(h.Attention, opts.Beta)
			if math.Abs(want-h.Score) > 1e-9 {
				t.Fatalf("row %d hyp %d: score %v, want %v", r, i, h.Score, want)
			}
			checked++
		}
	}
	if checked == 0 {
		t.Fatal("no hypothesis checked")
	}
}

// TestBeamIsIndependentOfBatching decodes sentences as one batch, from which finished sentences drop out, and
// one by one, and requires the same n-best lists.
func TestBeamIsIndependentOfBatching(t *testing.T) {
	for name, cfg := range beamTestConfigs() {
		t.Run(name, func(t *testing.T) { testBeamIsIndependentOfBatching(t, cfg) })
	}
}

func testBeamIsIndependentOfBatching(t *testing.T, cfg ModelConfig) {
	batch, examples := beamTestBatch()
	opts := decoder.BeamOptions{Width: 3, NBest: 3, MaxLen: 10}
	// The first random model whose best hypotheses have at least three lengths, so that blocks leave the batch
	// at different steps.
	var m *Seq2Seq[float64]
	var together [][]decoder.Scored
	for seed := uint64(1); seed < 200; seed++ {
		m = newTestModel[float64](t, cfg, 20, 6, seed)
		together = beam(t, m, &batch, opts)
		lengths := map[int]bool{}
		for _, list := range together {
			lengths[len(list[0].Attention)] = true
		}
		if len(lengths) >= 3 {
			break
		}
	}
	stops := map[int]bool{}
	for r, list := range together {
		alone := data.MakeBatches([]data.Example{examples[batch.Index[r]]}, data.BatchOptions{}, nil)[0]
		want := beam(t, m, &alone, opts)[0]
		if fmt.Sprint(hypTokens(list)) != fmt.Sprint(hypTokens(want)) {
			t.Fatalf("row %d: batched %v, alone %v", r, hypTokens(list), hypTokens(want))
		}
		for i := range list {
			if math.Abs(list[i].Score-want[i].Score) > 1e-9 {
				t.Fatalf("row %d hyp %d: batched score %v, alone %v", r, i, list[i].Score, want[i].Score)
			}
		}
		stops[len(list[0].Attention)] = true
	}
	if len(stops) < 3 {
		t.Fatal("every sentence stopped after the same number of steps: the batch never shrank")
	}
}

func hypTokens(list []decoder.Scored) [][]int {
	out := make([][]int, len(list))
	for i, h := range list {
		out[i] = h.Tokens
	}
	return out
}

// TestLSTMBiasesHavePyTorchsSpread: PyTorch draws an LSTM's b_ih and b_hh each uniform in ±1/sqrt(H) and adds
// them; attend keeps one bias per gate, which must have the sum's variance 2/(3H), not one draw's 1/(3H).
func TestLSTMBiasesHavePyTorchsSpread(t *testing.T) {
	cfg := ModelConfig{Emb: 8, EncHidden: 96, DecHidden: 128, AttnDim: 6, Cell: "lstm", Attention: "mlp"}
	m := newTestModel[float64](t, cfg, 10, 10, 1)
	for _, b := range []struct {
		name   string
		data   []float64
		hidden int
	}{{"encoder forward", m.Encoder.Layers[0].Fwd.Bias.Data, cfg.EncHidden}, {"encoder backward", m.Encoder.Layers[0].Bwd.Bias.Data, cfg.EncHidden},
		{"decoder", m.Decoder.Bias.Data, cfg.DecHidden}} {
		var sq float64
		for _, v := range b.data {
			sq += v * v
		}
		ratio := sq / float64(len(b.data)) / (1 / (3 * float64(b.hidden))) // 2 for PyTorch's sum, 1 for one draw
		if ratio < 1.7 || ratio > 2.3 {
			t.Errorf("%s bias: variance %.2f × that of one uniform draw, want 2", b.name, ratio)
		}
	}
}
