package model

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"testing"

	"github.com/attend-nmt/attend/align"
	"github.com/attend-nmt/attend/data"
	"github.com/attend-nmt/attend/dist"
	"github.com/attend-nmt/attend/internal/corpora"
	"github.com/attend-nmt/attend/kernels"
)

// BenchmarkTrainStep times one optimizer step (forward, backward, clip, Adam) of the "small" model on a batch of
// 64 pairs of 16 source and 15 target words with Multi30k-sized vocabularies, and reports target tokens/s.
func BenchmarkTrainStep(b *testing.B) { benchmarkTrainStep(b, Small().Model) }

// BenchmarkTrainStepAttention is BenchmarkTrainStep with each other score function (window 3 for local).
func BenchmarkTrainStepAttention(b *testing.B) {
	for _, attention := range align.Names() {
		if attention == Small().Model.Attention {
			continue
		}
		b.Run(attention, func(b *testing.B) {
			cfg := Small().Model
			cfg.Attention = attention
			benchmarkTrainStep(b, cfg)
		})
	}
}

// BenchmarkTrainStepGuided is BenchmarkTrainStep attending after the input (model.attend_after_input), guided
// toward diagonal links (weight 1), with and without the full-context alignment attention: what that attention
// costs a training step.
func BenchmarkTrainStepGuided(b *testing.B) {
	for _, full := range []bool{false, true} {
		b.Run(fmt.Sprintf("full_context_alignment=%v", full), func(b *testing.B) {
			cfg := Small().Model
			cfg.AttendAfterInput, cfg.FullContextAlignment = true, full
			benchmarkTrainStep(b, cfg, func(i int) []align.Link {
				links := make([]align.Link, 15)
				for j := range links {
					links[j] = align.Link{Src: j, Tgt: j}
				}
				return links
			})
		})
	}
}

// benchmarkTrainStep times BenchmarkTrainStep's steps of a model configured by cfg, guided toward guide's links
// when it is given.
func benchmarkTrainStep(b *testing.B, cfg ModelConfig, guide ...func(i int) []align.Link) {
	m := newTestModel[float32](b, cfg, 7882, 5898, 1)
	rng := rand.New(rand.NewPCG(1, 2))
	srcLens, tgtLens := make([]int, 64), make([]int, 64)
	for i := range srcLens {
		srcLens[i], tgtLens[i] = 16, 15
	}
	batch := randomBatch(rng, 7882, 5898, srcLens, tgtLens)
	tr := NewTrainer(m, 1e-3, 1, 2)
	if len(guide) > 0 {
		tr.Guide, tr.GuideWeight = guide[0], 1
	}
	if _, err := tr.Step(batch, rng, dist.Single{}); err != nil { // compile the graph outside the timing
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := tr.Step(batch, rng, dist.Single{}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(batch.TgtTokens()*b.N)/b.Elapsed().Seconds(), "tgt_tok/s")
}

// BenchmarkTrainStepSelfAttention is BenchmarkTrainStep with one and two self-attention layers (4 heads) over the
// encoder states.
func BenchmarkTrainStepSelfAttention(b *testing.B) {
	for _, layers := range []int{1, 2} {
		b.Run(fmt.Sprintf("layers=%d", layers), func(b *testing.B) {
			cfg := Small().Model
			cfg.SelfAttentionLayers = layers
			benchmarkTrainStep(b, cfg)
		})
	}
}

// BenchmarkTrainStepMulti30k times optimizer steps of the "small" model on real Multi30k De→En batches, as
// `attend train` makes them (64 pairs, lengths rounded to 4, bucketed, shuffled, graph cache 4): each iteration
// is the next batch of a fixed sequence, so the mix of shapes and graph rebuilds is a training run's. It reports
// target tokens/s and the live heap after the last step (HEAPPROFILE=path also writes its profile). Skipped
// without the Multi30k directory named by MULTI30K.
func BenchmarkTrainStepMulti30k(b *testing.B) {
	benchmarkTrainStepMulti30k(b, Small().Model, 1, "float32")
}

// BenchmarkTrainStepMulti30kWorkers is BenchmarkTrainStepMulti30k stepped by one worker whose products use
// every thread and by one worker per thread with single-threaded products (train.workers, Trainer.SetWorkers).
func BenchmarkTrainStepMulti30kWorkers(b *testing.B) {
	threads := runtime.GOMAXPROCS(0)
	for _, workers := range []int{1, threads} {
		b.Run(fmt.Sprintf("workers=%d", workers), func(b *testing.B) { benchmarkTrainStepMulti30k(b, Small().Model, workers, "float32") })
	}
}

// BenchmarkTrainStepMulti30kBF16 is BenchmarkTrainStepMulti30k as training runs by default (one worker per thread)
// with float32 products, with the output layer's and the decoder's products split in bfloat16x3 on AMX
// (train.bf16x3) and with the output layer's in bfloat16 (train.bf16), the second skipped where AMX cannot run
// and the third where neither AMX nor AVX512-BF16 can:
// its GFLOP/s against BenchmarkGemm's is the roofline share of each.
func BenchmarkTrainStepMulti30kBF16(b *testing.B) {
	threads := runtime.GOMAXPROCS(0)
	for _, products := range []string{"float32", "bf16x3", "bf16"} {
		b.Run(products, func(b *testing.B) {
			if _, err := kernels.NewAMXOutputs(1, products == "bf16x3"); err != nil && products != "float32" {
				b.Skipf("no bfloat16 products here: %v", err)
			}
			benchmarkTrainStepMulti30k(b, Small().Model, threads, products)
		})
	}
}

// BenchmarkTrainStepMulti30kVariants is BenchmarkTrainStepMulti30k for each variant of the README's attention
// table (scripts/attention-table.sh), on the same batches: the table's training speed column.
func BenchmarkTrainStepMulti30kVariants(b *testing.B) {
	variants := []string{"additive+input-feeding", "additive+self-attention"}
	for _, v := range append(align.Names(), variants...) {
		b.Run(v, func(b *testing.B) {
			cfg := Small().Model
			switch v {
			case "additive+input-feeding":
				cfg.InputFeeding = true
			case "additive+self-attention":
				cfg.SelfAttentionLayers = 1
			default:
				cfg.Attention = v
			}
			benchmarkTrainStepMulti30k(b, cfg, 1, "float32")
		})
	}
}

// benchmarkTrainStepMulti30k times training steps of model on Multi30k batches with workers workers, their
// products in float32 or on AMX, "bf16" or "bf16x3" (Trainer.SetProducts), as products says.
func benchmarkTrainStepMulti30k(b *testing.B, model ModelConfig, workers int, products string) {
	multi30k := corpora.Multi30k(b, "train.de", "train.en")
	pairs, err := data.ReadParallel(filepath.Join(multi30k, "train.de"), filepath.Join(multi30k, "train.en"), data.NewRegexTokenizer(true))
	if err != nil {
		b.Fatal(err)
	}
	pairs, _ = data.Filter(pairs, 50)
	var srcSents, tgtSents [][]string
	for _, p := range pairs {
		srcSents, tgtSents = append(srcSents, p.Src), append(tgtSents, p.Tgt)
	}
	cfg := Small()
	cfg.Model = model
	m, err := New[float32](cfg.Model, data.BuildVocab(srcSents, 2, 0), data.BuildVocab(tgtSents, 2, 0))
	if err != nil {
		b.Fatal(err)
	}
	m.Init(rand.New(rand.NewPCG(1, 0)))
	rng := rand.New(rand.NewPCG(1, 1))
	batches := data.MakeBatches(data.EncodeExamples(pairs, m.SrcVocab, m.TgtVocab),
		data.BatchOptions{BatchSize: cfg.Data.Batch, ChunkBatches: cfg.Data.BucketChunk, RoundLen: cfg.Data.RoundLen, Shuffle: true}, rng)
	tr := NewTrainer(m, 1e-3, 1, cfg.Train.GraphCache)
	tr.SetWorkers(workers)
	tr.SplitVocabulary = cfg.Train.SplitVocabulary
	if err := tr.SetProducts(chooseProducts(b, products)); err != nil {
		b.Fatal(err)
	}
	// Dropout draws from a *rand.PCG, as attend train's do: its long masks are drawn on every core.
	dropout := rand.NewPCG(1, 2)
	for i := 0; i < 20; i++ { // warm up: compile the common shapes
		if _, err := tr.Step(&batches[i], dropout, dist.Single{}); err != nil {
			b.Fatal(err)
		}
	}
	tokens, flops := 0, 0.0
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		batch := &batches[20+i%(len(batches)-20)]
		tokens += batch.TgtTokens()
		flops += trainStepFLOPs(cfg.Model, m.TgtVocab.Size(), batch)
		if _, err := tr.Step(batch, dropout, dist.Single{}); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(tokens)/b.Elapsed().Seconds(), "tgt_tok/s")
	b.ReportMetric(flops/b.Elapsed().Seconds()/1e9, "GFLOP/s")
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	b.ReportMetric(float64(ms.HeapAlloc)/(1<<20), "live_MB")
	if path := os.Getenv("HEAPPROFILE"); path != "" {
		if err := writeHeapProfile(path); err != nil {
			b.Fatal(err)
		}
	}
	runtime.KeepAlive(tr) // the trainer, its cached graphs and scratch are what the heap figures measure
}

// writeHeapProfile writes the profile of the live heap to path (go tool pprof -sample_index=inuse_space).
func writeHeapProfile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("heap profile: %w", err)
	}
	if err := pprof.WriteHeapProfile(f); err != nil {
		f.Close()
		return fmt.Errorf("heap profile %s: %w", path, err)
	}
	return f.Close()
}

// trainStepFLOPs counts the floating-point operations of the matrix products of one training step of the model
// of cfg (additive attention, one layer, no input feeding) on batch b, padded positions included except in the
// output layer (which skips them), as llm.c counts them: 2 per multiply-add, and the backward pass twice the
// forward (one product for the input's gradient, one for the weights'). Element-wise work (activations,
// softmax, Adam) is left out: it is small beside the products, and the figure is compared with the GEMM roofline
// (kernels.BenchmarkGemm).
func trainStepFLOPs(cfg ModelConfig, vocab int, b *data.Batch) float64 {
	B, S, T := float64(b.Rows), float64(b.SrcLen), float64(b.TgtLen)
	E, H, D, A, V := float64(cfg.Emb), float64(cfg.EncHidden), float64(cfg.DecHidden), float64(cfg.AttnDim), float64(vocab)
	M := 2 * H
	encoder := 2 * S * B * 2 * (E + H) * 4 * H // two directions: input and recurrent products of 4 gates
	keys := S * B * 2 * M * A                  // W_h h_i, once per sentence
	bridge := 2 * B * 2 * M * D                // s_0 and c_0
	perStep := B * (2*D*A + 2*S*A + 2*S*M +    // query projection, vᵀ tanh(·) over the source, context
		2*(E+M+D)*4*D) // the LSTM cell's products
	output := float64(b.TgtTokens()) * 2 * (D + M + E) * V // the output layer, which skips padded positions
	return 3 * (encoder + keys + bridge + T*perStep + output)
}
