package model

import (
	"github.com/attend-nmt/attend/dist"
	"math"
	"math/rand/v2"
	"runtime"
	"testing"
)

// TestFillDropoutMask checks inverted-dropout masks of an odd length (so the last 64-bit draw is used by half):
// every value is 0 or 1/(1-p), and the share of zeros is p to within four binomial standard deviations, in the
// first and second half of each draw alike.
func TestFillDropoutMask(t *testing.T) {
	const n = 200_001
	rng := rand.New(rand.NewPCG(1, 2))
	mask := make([]float32, n)
	for _, p := range []float64{0.1, 0.2, 0.5} {
		fillDropoutMask(mask, p, rng)
		keep := float32(1 / (1 - p))
		var zeros [2]int
		for i, m := range mask {
			switch m {
			case 0:
				zeros[i%2]++
			case keep:
			default:
				t.Fatalf("p=%g: mask[%d] = %g, want 0 or %g", p, i, m, keep)
			}
		}
		for half, z := range zeros {
			count := float64(n/2 + (n%2)*(1-half))
			if sd := math.Sqrt(count * p * (1 - p)); math.Abs(float64(z)-p*count) > 4*sd {
				t.Errorf("p=%g: %d zeros among %.0f values of draw half %d, want %.0f ± %.0f", p, z, count, half, p*count, 4*sd)
			}
		}
	}
}

// BenchmarkFillDropoutMask times the masks of one Multi30k step of the "small" model, (1024, 640) before the
// output layer and two (16, 64, 128) on the embeddings, drawn as training draws them: "serial" from a
// *rand.Rand (one value after another), "parallel" from its *rand.PCG (shared out among the cores).
func BenchmarkFillDropoutMask(b *testing.B) {
	sizes := []int{1024 * 640, 16 * 64 * 128, 16 * 64 * 128}
	masks := make([][]float32, len(sizes))
	for i, n := range sizes {
		masks[i] = make([]float32, n)
	}
	for _, bc := range []struct {
		name string
		rng  rand.Source
	}{{"serial", rand.New(rand.NewPCG(1, 2))}, {"parallel", rand.NewPCG(1, 2)}} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				for _, mask := range masks {
					fillDropoutMask(mask, 0.2, bc.rng)
				}
			}
		})
	}
}

// TestFillMaskParallelMatchesSerial checks that sharing a mask's draws out among goroutines changes nothing:
// for lengths odd and even, around the ranges' bounds, and split among 2, 3 and 8 goroutines, fillMaskParallel
// fills the mask bit for bit as fillMask does from the same PCG, and leaves the PCG where fillMask leaves it
// (their next draws are equal).
func TestFillMaskParallelMatchesSerial(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	const grain = 8
	p := 0.3
	keep, threshold := float32(1/(1-p)), uint64(p*(1<<32))
	for _, procs := range []int{2, 3, 8} {
		runtime.GOMAXPROCS(procs)
		for _, n := range []int{0, 1, 2, 31, 32, 33, 47, 48, 49, 63, 64, 65, 1000, 1001, 12345} {
			serial, parallel := rand.NewPCG(uint64(n), 7), rand.NewPCG(uint64(n), 7)
			want, got := make([]float32, n), make([]float32, n)
			fillMask(want, keep, threshold, serial)
			if err := fillMaskParallel(got, keep, threshold, parallel, grain); err != nil {
				t.Fatal(err)
			}
			for i := range want {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					t.Fatalf("%d goroutines, n=%d: mask[%d] = %g, drawn one after another %g", procs, n, i, got[i], want[i])
				}
			}
			for i := range 3 {
				if a, b := parallel.Uint64(), serial.Uint64(); a != b {
					t.Fatalf("%d goroutines, n=%d: draw %d after the mask %#x, after the serial mask %#x", procs, n, i, a, b)
				}
			}
		}
	}
}

// TestFillDropoutMaskSourceIndependent checks fillDropoutMask from a *rand.PCG (drawn in parallel when long)
// against the same PCG behind a *rand.Rand (always drawn on the calling goroutine), for masks shorter and longer
// than the parallel threshold: the masks and the sources' next draws must be equal bit for bit.
func TestFillDropoutMaskSourceIndependent(t *testing.T) {
	limit := 2 * 2 * minDrawsPerWorker // the fewest values drawn in parallel
	for _, n := range []int{5, limit - 2, limit - 1, limit, limit + 1, 3*limit + 7, 1024*640 + 1} {
		pcg, viaRand := rand.NewPCG(3, uint64(n)), rand.New(rand.NewPCG(3, uint64(n)))
		got, want := make([]float32, n), make([]float32, n)
		fillDropoutMask(got, 0.2, pcg)
		fillDropoutMask(want, 0.2, viaRand)
		for i := range want {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				t.Fatalf("n=%d: mask[%d] = %g from the PCG, %g through a rand.Rand", n, i, got[i], want[i])
			}
		}
		if a, b := pcg.Uint64(), viaRand.Uint64(); a != b {
			t.Fatalf("n=%d: next draw %#x from the PCG, %#x through a rand.Rand", n, a, b)
		}
	}
}

// TestTrainingIgnoresHowMasksAreDrawn trains a model whose embedding masks are long enough to be drawn on every
// core for 3 steps twice, once with each step's PCG behind a *rand.Rand (masks drawn one value after another)
// and once with the bare PCG (drawn in parallel), and requires the same losses and weights bit for bit: with
// one worker and with two, and with an attention that samples Gumbel noise from the same stream after the masks.
func TestTrainingIgnoresHowMasksAreDrawn(t *testing.T) {
	const rows, srcLen, tgtLen = 32, 40, 8
	cfg := ModelConfig{Emb: 128, EncHidden: 8, DecHidden: 8, AttnDim: 8, Cell: "lstm", Dropout: 0.2, Temperature: 1}
	if rows*srcLen*cfg.Emb < 2*2*minDrawsPerWorker {
		t.Fatalf("the source embedding mask (%d values) is too short to be drawn in parallel", rows*srcLen*cfg.Emb)
	}
	srcLens, tgtLens := make([]int, rows), make([]int, rows)
	for r := range rows {
		srcLens[r], tgtLens[r] = srcLen-r%5, tgtLen-1-r%3
	}
	for _, attention := range []string{"additive", "hard"} {
		for _, workers := range []int{1, 2} {
			cfg.Attention = attention
			// train returns the losses of 3 steps and the weights after them, each step's masks drawn from
			// source(step).
			train := func(source func(step uint64) rand.Source) ([]float64, []float32) {
				tr := NewTrainer(newTestModel[float32](t, cfg, 9, 11, 1), 1e-2, 1, 1)
				tr.SetWorkers(workers)
				var losses []float64
				for step := range uint64(3) {
					b := randomBatch(rand.New(rand.NewPCG(5, step)), 9, 11, srcLens, tgtLens)
					res, err := tr.Step(b, source(step), dist.Single{})
					if err != nil {
						t.Fatal(err)
					}
					losses = append(losses, res.Loss)
				}
				return losses, append([]float32(nil), tr.Model.Params.Flat()...)
			}
			wantLoss, want := train(func(step uint64) rand.Source { return rand.New(rand.NewPCG(9, step)) })
			gotLoss, got := train(func(step uint64) rand.Source { return rand.NewPCG(9, step) })
			for i := range wantLoss {
				if gotLoss[i] != wantLoss[i] {
					t.Fatalf("%s, %d workers: step %d loss %v with parallel masks, %v with serial ones", attention, workers, i, gotLoss[i], wantLoss[i])
				}
			}
			for i := range want {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					t.Fatalf("%s, %d workers: weight %d is %v with parallel masks, %v with serial ones", attention, workers, i, got[i], want[i])
				}
			}
		}
	}
}
