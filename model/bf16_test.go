package model

import (
	"context"
	"math"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/attend-nmt/attend/data"
	"github.com/attend-nmt/attend/dist"
	"github.com/attend-nmt/attend/kernels"
)

// skipWithoutBF16Products skips a test of train.precision bf16 (split false: AMX or AVX512-BF16) or bf16x3 (split
// true: AMX) on a machine where those products cannot run.
func skipWithoutBF16Products(t *testing.T, split bool) {
	t.Helper()
	if _, err := kernels.NewAMXOutputs(1, split); err != nil {
		t.Skipf("no bfloat16 products here (split %v): %v", split, err)
	}
}

// chooseProducts returns the products precision chooses here (kernels.Choose), failing tb where it cannot run.
func chooseProducts(tb testing.TB, precision string) kernels.Products {
	tb.Helper()
	p, err := kernels.Choose(kernels.Precision(precision))
	if err != nil {
		tb.Fatal(err)
	}
	return p
}

// TestBF16TrainingLearnsTheTinyTask trains the tiny copying task with the output layer's products in bfloat16
// (train.bf16) to 100% exact match, as float32 training does (TestTinyCorpusIsLearned), with two workers.
func TestBF16TrainingLearnsTheTinyTask(t *testing.T) {
	skipWithoutBF16Products(t, false)
	cfg := tinyConfig()
	cfg.Train.MaxSteps, cfg.Train.Precision = 300, kernels.PrecisionBF16
	m, examples := tinySetup(t, cfg, tinyCorpus(24, 1))
	if acc := exactMatch(m, examples); acc > 0.2 {
		t.Fatalf("untrained model already gets %.0f%% right", 100*acc)
	}
	_, err := Train(context.Background(), TrainOptions{Config: cfg, Corpus: data.Examples(examples), Model: m, Workers: 2, Out: filepath.Join(t.TempDir(), "tiny.ckpt")})
	if err != nil {
		t.Fatal(err)
	}
	if acc := exactMatch(m, examples); acc < 1 {
		t.Fatalf("exact match %.1f%% after %d steps with bfloat16 products, want 100%%", 100*acc, cfg.Train.MaxSteps)
	}
}

// amxStepLosses steps the tiny task's batches (dropout 0.1, input feeding as feeding says) on two workers with
// products as products says, "float32", "bf16" or "bf16x3" (Trainer.SetProducts), and returns every step's loss.
func amxStepLosses(t *testing.T, products string, feeding bool) []float64 {
	cfg := tinyConfig()
	cfg.Model.Dropout, cfg.Model.InputFeeding = 0.1, feeding
	m, examples := tinySetup(t, cfg, tinyCorpus(40, 9))
	plan := data.MakeBatches(examples, data.BatchOptions{BatchSize: 8, ChunkBatches: 2, Shuffle: true}, rand.New(rand.NewPCG(1, 1)))
	tr := NewTrainer(m, 1e-2, 1, 2)
	tr.SetWorkers(2)
	if err := tr.SetProducts(chooseProducts(t, products)); err != nil {
		t.Fatal(err)
	}
	var out []float64
	for i := range plan {
		res, err := tr.Step(&plan[i], rand.NewPCG(uint64(i), 2), dist.Single{})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, res.Loss)
	}
	return out
}

// requireLossesFollow fails t unless every loss of got is within tol (relative) of want's and some differ (the
// products did run on AMX).
func requireLossesFollow(t *testing.T, products string, got, want []float64, tol float64) {
	t.Helper()
	differs := false
	for i := range want {
		if !near(got[i], want[i], tol) {
			t.Fatalf("step %d: loss %.8g with %s products, %.8g with float32", i, got[i], products, want[i])
		}
		differs = differs || got[i] != want[i]
	}
	if !differs {
		t.Fatalf("%s products gave float32's losses: AMX did not run", products)
	}
}

// TestBF16StepsFollowFloat32 steps the same batches with float32 and with bfloat16 output-layer products and
// requires every loss within 1% of float32's (the products' terms are rounded to 8 bits, not the model), and
// the two to differ (the bfloat16 products did run).
func TestBF16StepsFollowFloat32(t *testing.T) {
	skipWithoutBF16Products(t, false)
	requireLossesFollow(t, "bf16", amxStepLosses(t, "bf16", false), amxStepLosses(t, "float32", false), 0.01)
}

// TestBF16NeedsFloat32 refuses bfloat16 products for a float64 model, with a message.
func TestBF16NeedsFloat32(t *testing.T) {
	m := newTestModel[float64](t, tinyConfig().Model, 9, 11, 1)
	p := kernels.Products{} // bfloat16 products need not run here to be refused
	if avail, err := kernels.Choose(kernels.PrecisionBF16); err == nil {
		p = avail
	}
	if p.Float32() {
		t.Skip("no bfloat16 products here")
	}
	if err := NewTrainer(m, 1e-3, 0, 2).SetProducts(p); err == nil || !strings.Contains(err.Error(), "float32") {
		t.Fatalf("SetProducts on float64 weights: %v", err)
	}
}

// TestBF16TrainsATransformer steps a small float32 Transformer (tied output layer, dropout, label smoothing) with
// float32 and with bfloat16 output-layer products: its output layer goes through the same fused op, so every
// step's loss must follow float32's within 1% and differ from it somewhere.
func TestBF16TrainsATransformer(t *testing.T) {
	skipWithoutBF16Products(t, false)
	cfg := ModelConfig{Type: TypeTransformer, DModel: 16, Heads: 2, FF: 24, Layers: 2, Positions: "sinusoidal", MaxPositions: 64,
		TiedEmbeddings: true, Dropout: 0.1}
	var losses [2][]float64
	for run, bf16 := range []bool{false, true} {
		m := newTestModel[float32](t, cfg, 9, 11, 1)
		tr := NewTrainer(m, 1e-2, 1, 2)
		tr.LabelSmoothing = 0.1
		if bf16 {
			if err := tr.SetProducts(chooseProducts(t, "bf16")); err != nil {
				t.Fatal(err)
			}
		}
		for step := 0; step < 4; step++ {
			b := randomBatch(rand.New(rand.NewPCG(5, uint64(step))), 9, 11, []int{3, 1, 2, 4}, []int{2, 3, 1, 2})
			res, err := tr.Step(b, rand.New(rand.NewPCG(9, uint64(step))), dist.Single{})
			if err != nil {
				t.Fatal(err)
			}
			losses[run] = append(losses[run], res.Loss)
		}
	}
	differs := false
	for step, want := range losses[0] {
		got := losses[1][step]
		if !near(got, want, 0.01) {
			t.Fatalf("step %d: loss %.6g with bfloat16 products, %.6g with float32", step+1, got, want)
		}
		differs = differs || got != want
	}
	if !differs {
		t.Fatal("bfloat16 products gave float32's losses: AMX did not run")
	}
}

// TestBF16x3StepsFollowFloat32 steps the same batches, dropout included, with float32 products and with the
// output layer's and the decoder's products split in bfloat16x3 on AMX (Trainer.SetProducts), two workers
// each: every loss must be within 1e-4 of float32's (terms off by a relative 2^-16 at most, where train.bf16's
// single rounding moves them by 2^-9 and its losses by up to 1%), and differ from it somewhere (AMX did run).
func TestBF16x3StepsFollowFloat32(t *testing.T) {
	skipWithoutBF16Products(t, true)
	requireLossesFollow(t, "bf16x3", amxStepLosses(t, "bf16x3", true), amxStepLosses(t, "float32", true), 1e-4)
}

// TestWorkersShareTheVocabulary computes one batch's gradients (label smoothing, dropout) with bfloat16x3 products
// (bfloat16 on AVX512-BF16 where AMX does not run) on two and three workers, the output layer's vocabulary of 110
// words shared out between them (Trainer.SplitVocabulary, kernels.OutputTeam) and not, for the RNN and a tied
// Transformer: the loss must agree within 1e-6 and every gradient within 1e-5 of the largest (the same products
// summed in another order), and the two must differ somewhere (the team did run).
func TestWorkersShareTheVocabulary(t *testing.T) {
	skipWithoutBF16Products(t, false)
	products := chooseProducts(t, "bf16") // bfloat16x3 where AMX runs, bfloat16 on AVX512-BF16 elsewhere
	if auto := chooseProducts(t, "auto"); auto.Format() == kernels.BF16x3 {
		products = auto
	}
	for _, kind := range []string{"rnn", TypeTransformer} {
		for _, workers := range []int{2, 3} {
			gradients := func(split bool) (StepResult, []float32) {
				var m *Seq2Seq[float32]
				if kind == TypeTransformer {
					m = newTestModel[float32](t, ModelConfig{Type: TypeTransformer, DModel: 16, Heads: 2, FF: 24, Layers: 2,
						Positions: "sinusoidal", MaxPositions: 64, TiedEmbeddings: true, Dropout: 0.1}, 90, 110, 1)
				} else {
					m = newTestModel[float32](t, ModelConfig{Emb: 8, EncHidden: 8, DecHidden: 16, AttnDim: 8, Cell: "lstm",
						Attention: "additive", Dropout: 0.1, Layers: 1, Temperature: 1}, 90, 110, 1)
				}
				b := randomBatch(rand.New(rand.NewPCG(5, 6)), 90, 110, []int{3, 1, 2, 5, 4}, []int{2, 3, 1, 4, 2})
				tr := NewTrainer(m, 1e-3, 0, 2)
				tr.SetWorkers(workers)
				tr.LabelSmoothing, tr.SplitVocabulary = 0.1, split
				if err := tr.SetProducts(products); err != nil {
					t.Fatal(err)
				}
				res, err := tr.Gradients(b, rand.NewPCG(9, 9))
				if err != nil {
					t.Fatal(err)
				}
				return res, append([]float32(nil), tr.Grads.Flat()...)
			}
			want, wantGrads := gradients(false)
			got, gotGrads := gradients(true)
			if !near(got.Loss, want.Loss, 1e-6) || got.Tokens != want.Tokens {
				t.Fatalf("%s, %d workers: loss %.9g over %d words shared out, %.9g over %d not", kind, workers, got.Loss, got.Tokens, want.Loss, want.Tokens)
			}
			scale := 0.0
			for _, g := range wantGrads {
				scale = max(scale, math.Abs(float64(g)))
			}
			differs := false
			for i := range wantGrads {
				if d := math.Abs(float64(gotGrads[i] - wantGrads[i])); d > 1e-5*scale {
					t.Fatalf("%s, %d workers: gradient %d is %g shared out, %g not", kind, workers, i, gotGrads[i], wantGrads[i])
				}
				differs = differs || gotGrads[i] != wantGrads[i]
			}
			if !differs {
				t.Fatalf("%s, %d workers: the same gradients bit for bit: the vocabulary was not shared out", kind, workers)
			}
		}
	}
}
