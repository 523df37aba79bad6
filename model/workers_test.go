package model

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/attend-nmt/attend/data"
	"github.com/attend-nmt/attend/dist"
)

// TestWorkersComputeTheGradientsOfOne computes the gradients of one batch (a padding row, dropout, input
// feeding, two layers, guided alignment; an attention that samples Gumbel noise; and a Transformer with
// dropout and guided alignment of its alignment head) in float64 with one
// trainer stepping it whole and with 2 and 3 workers sharing its rows, and requires the same loss and gradients
// to 1e-12: the workers see the dropout masks and noise a single graph would have drawn, and their gradients
// add up to its.
func TestWorkersComputeTheGradientsOfOne(t *testing.T) {
	for _, attention := range []string{"additive", "hard", TypeTransformer} {
		t.Run(attention, func(t *testing.T) {
			cfg := ModelConfig{Emb: 3, EncHidden: 4, DecHidden: 5, AttnDim: 3, Cell: "lstm", Attention: attention, Dropout: 0.25,
				InputFeeding: true, Layers: 2, Temperature: 1}
			gradients := func(workers int) (StepResult, []float64) {
				var m *Seq2Seq[float64]
				if attention == TypeTransformer {
					m = guidedTransformer(t, 0.25)
				} else {
					m = newTestModel[float64](t, cfg, 9, 11, 1)
				}
				b := randomBatch(rand.New(rand.NewPCG(5, 6)), 9, 11, []int{3, 1, 2, 2, 3, 0}, []int{2, 3, 1, 4, 2, 0})
				b.Index = []int{0, 1, 2, 0, 1}
				tr := NewTrainer(m, 1e-3, 0, 2)
				tr.SetWorkers(workers)
				if attention != "hard" {
					tr.Guide, tr.GuideWeight = guideLinks, 0.5
				}
				res, err := tr.Gradients(b, rand.New(rand.NewPCG(9, 9)))
				if err != nil {
					t.Fatal(err)
				}
				return res, append([]float64(nil), tr.Grads.Flat()...)
			}
			want, wantGrads := gradients(1)
			if attention != "hard" && want.Guided <= 0 {
				t.Fatalf("guided loss %v, want > 0", want.Guided)
			}
			for _, workers := range []int{2, 3} {
				got, gotGrads := gradients(workers)
				if !near(got.Loss, want.Loss, 1e-12) || !near(got.Guided, want.Guided, 1e-12) || got.Tokens != want.Tokens {
					t.Fatalf("%d workers: loss %v guided %v tokens %d; one: %v, %v, %d", workers, got.Loss, got.Guided, got.Tokens, want.Loss, want.Guided, want.Tokens)
				}
				scale := 0.0
				for _, g := range wantGrads {
					scale = max(scale, math.Abs(g))
				}
				for i := range wantGrads {
					if math.Abs(gotGrads[i]-wantGrads[i]) > 1e-12*scale {
						t.Fatalf("%d workers: gradient %d is %v, one worker's %v", workers, i, gotGrads[i], wantGrads[i])
					}
				}
			}
		})
	}
}

// near reports whether a and b agree to a relative tolerance tol.
func near(a, b, tol float64) bool {
	return math.Abs(a-b) <= tol*math.Max(1, math.Max(math.Abs(a), math.Abs(b)))
}

// TestWorkersTrainAsOne trains the tiny model (dropout, two layers) for 24 steps with one worker and with two,
// and requires the loss of every step to agree within 1e-4 (relative) and every final weight within 1e-4: float32
// sums in another order, and nothing else. A bug in sharing out the rows or the dropout masks moves the losses
// by 1e-2 and more. The tiny Transformer trains so too, guided toward diagonal links, its guided-alignment
// losses agreeing as well.
func TestWorkersTrainAsOne(t *testing.T) {
	for _, arch := range []string{TypeRNN, TypeTransformer} {
		t.Run(arch, func(t *testing.T) { testWorkersTrainAsOne(t, arch) })
	}
}

func testWorkersTrainAsOne(t *testing.T, arch string) {
	cfg := tinyConfig()
	cfg.Model.Dropout, cfg.Model.Layers = 0.2, 2
	guided := arch == TypeTransformer
	if guided {
		cfg.Model = tinyTransformer(cfg.Model)
		cfg.Model.AlignmentHead = 1
		cfg.Train.GuidedAlignment, cfg.Train.GuidedAlignmentWeight = "diagonal.align", 0.5
	}
	cfg.Train.MaxSteps = 24
	pairs := tinyCorpus(40, 3)
	var names []string // each weight's tensor
	train := func(workers int) (string, []float32) {
		m, examples := tinySetup(t, cfg, pairs)
		names = names[:0]
		for _, p := range m.Params.List() {
			for range p.Data {
				names = append(names, p.Name)
			}
		}
		var log bytes.Buffer
		opts := TrainOptions{Config: cfg, Corpus: data.Examples(examples), Model: m, Workers: workers, Out: filepath.Join(t.TempDir(), "w.ckpt"), Metrics: &log}
		if guided {
			opts.Guide = diagonalLinks(examples)
		}
		if _, err := Train(context.Background(), opts); err != nil {
			t.Fatal(err)
		}
		return log.String(), append([]float32(nil), m.Params.Flat()...)
	}
	oneLog, oneWeights := train(1)
	twoLog, twoWeights := train(2)
	oneLosses, twoLosses := losses(oneLog), losses(twoLog)
	one, two := strings.Split(oneLosses, "\n"), strings.Split(twoLosses, "\n")
	if len(one) != cfg.Train.MaxSteps || len(two) != len(one) {
		t.Fatalf("%d and %d loss lines, want %d", len(one), len(two), cfg.Train.MaxSteps)
	}
	for i := range one {
		a, b := lossOf(t, one[i]), lossOf(t, two[i])
		if !near(a, b, 1e-4) {
			t.Fatalf("step %d: loss %v with one worker, %v with two", i+1, a, b)
		}
	}
	if guided {
		a, b := guidedLossesOf(t, oneLog), guidedLossesOf(t, twoLog)
		if len(a) != cfg.Train.MaxSteps || len(b) != len(a) || a[0] <= 0 {
			t.Fatalf("guided losses %v with one worker, %v with two; want %d, positive", a, b, cfg.Train.MaxSteps)
		}
		for i := range a {
			if !near(a[i], b[i], 1e-4) {
				t.Fatalf("step %d: guided loss %v with one worker, %v with two", i+1, a[i], b[i])
			}
		}
	}
	for i := range oneWeights {
		if d := math.Abs(float64(oneWeights[i] - twoWeights[i])); d > 1e-4 {
			t.Fatalf("weight %d (%s): %v with one worker, %v with two", i, names[i], oneWeights[i], twoWeights[i])
		}
	}
	if oneLosses == twoLosses && bitsEqual(oneWeights, twoWeights) {
		t.Log("one and two workers agree bit for bit")
	}
}

// guidedLossesOf is the guided_loss of every step line of a metrics log.
func guidedLossesOf(t *testing.T, log string) []float64 {
	var out []float64
	for _, line := range strings.Split(log, "\n") {
		if !strings.Contains(line, `"event":"step"`) {
			continue
		}
		_, v, ok := strings.Cut(line, `"guided_loss":`)
		v, _, _ = strings.Cut(v, ",")
		x, err := strconv.ParseFloat(strings.TrimSuffix(v, "}"), 64)
		if !ok || err != nil {
			t.Fatalf("no guided loss in %q", line)
		}
		out = append(out, x)
	}
	return out
}

// lossOf is the loss of a line of losses.
func lossOf(t *testing.T, line string) float64 {
	_, v, ok := strings.Cut(line, `"loss":`)
	x, err := strconv.ParseFloat(v, 64)
	if !ok || err != nil {
		t.Fatalf("no loss in %q", line)
	}
	return x
}

// TestWorkersReserveTheirScratch checks that after Trainer.Reserve for the largest batch, the scratch of no
// worker grows while two workers train on batches of several shapes.
func TestWorkersReserveTheirScratch(t *testing.T) {
	cfg := tinyConfig()
	cfg.Model.Dropout = 0.2
	m, examples := tinySetup(t, cfg, tinyCorpus(40, 9))
	plan := data.MakeBatches(examples, data.BatchOptions{BatchSize: 8, ChunkBatches: 2, Shuffle: true}, rand.New(rand.NewPCG(1, 1)))
	tr := NewTrainer(m, 1e-2, 1, 2)
	tr.SetWorkers(2)
	var rows, srcLen, tgtLen int
	for _, b := range plan {
		rows, srcLen, tgtLen = max(rows, b.Rows), max(srcLen, b.SrcLen), max(tgtLen, b.TgtLen)
	}
	if err := tr.Reserve(rows, srcLen, tgtLen); err != nil {
		t.Fatal(err)
	}
	sizes := func() string {
		s := fmt.Sprint(tr.draws.Len())
		for _, w := range tr.workers {
			s += fmt.Sprintf(" %d", w.arena.Len())
		}
		return s
	}
	reserved := sizes()
	for i := range plan {
		if _, err := tr.Step(&plan[i], rand.New(rand.NewPCG(uint64(i), 2)), dist.Single{}); err != nil {
			t.Fatal(err)
		}
		if got := sizes(); got != reserved {
			t.Fatalf("batch %d (%d×%d×%d): the scratch (draws, then each worker's) grew from %s to %s", i, plan[i].Rows, plan[i].SrcLen, plan[i].TgtLen, reserved, got)
		}
	}
}

// TestStepTakesTheNormDuringTheReduction steps batches with one worker and with two and requires each step's
// gradient norm, which the reduction's block sums give, to be GlobalNorm of the gradients it left, bit for bit,
// and those gradients to be the ones Gradients computes for the same batch and masks.
func TestStepTakesTheNormDuringTheReduction(t *testing.T) {
	for _, workers := range []int{1, 2} {
		cfg := tinyConfig()
		cfg.Model.Dropout = 0.2
		m, examples := tinySetup(t, cfg, tinyCorpus(40, 9))
		plan := data.MakeBatches(examples, data.BatchOptions{BatchSize: 8, ChunkBatches: 2, Shuffle: true}, rand.New(rand.NewPCG(1, 1)))
		tr := NewTrainer(m, 1e-2, 1, 2)
		tr.SetWorkers(workers)
		for i := range plan[:4] {
			// Gradients first (the weights stay), then Step on the same batch and masks.
			if _, err := tr.Gradients(&plan[i], rand.New(rand.NewPCG(uint64(i), 2))); err != nil {
				t.Fatal(err)
			}
			want := append([]float32(nil), tr.Grads.Flat()...)
			res, err := tr.Step(&plan[i], rand.New(rand.NewPCG(uint64(i), 2)), dist.Single{})
			if err != nil {
				t.Fatal(err)
			}
			if norm := GlobalNorm(tr.Grads); res.GradNorm != norm || res.GradNorm == 0 {
				t.Fatalf("%d workers, batch %d: the step's norm %.17g, GlobalNorm %.17g", workers, i, res.GradNorm, norm)
			}
			for j, g := range tr.Grads.Flat() {
				if math.Float32bits(g) != math.Float32bits(want[j]) {
					t.Fatalf("%d workers, batch %d: gradient %d is %g after Step, %g from Gradients", workers, i, j, g, want[j])
				}
			}
		}
	}
}
