package decoder

import (
	"github.com/attend-nmt/attend/kernels"
	"math/rand/v2"
	"testing"

	"github.com/attend-nmt/attend/encoder"
	"github.com/attend-nmt/attend/internal/gradcheck"
	"github.com/attend-nmt/attend/param"
)

// Sizes of the benchmarks' decoders and batch: those of the small Multi30k model (emb 128, encoder 2×128,
// decoder 256, attention 128) over a vocabulary of 6,000 words, and a batch of 16 sentences of 8 to 19 words
// decoded to 12 words (random weights rarely choose </s>, so most rows take every step).
const (
	benchVocab, benchRows, benchMaxLen = 6000, 16, 12
)

// benchDecoder is a float32 decoder of the benchmarks' sizes, drawn from seed.
func benchDecoder(b *testing.B, seed uint64) *Decoder[float32] {
	b.Helper()
	set := param.NewSet[float32]()
	d, err := New(set, Config{Vocab: benchVocab, Emb: 128, Hidden: 256, MemDim: 256, Attn: 128}, nil)
	if err != nil {
		b.Fatal(err)
	}
	set.Pack()
	d.Init(rand.New(rand.NewPCG(seed, 1)))
	return d
}

// benchEncoding is a random encoder output of the benchmarks' batch, and its source lengths.
func benchEncoding(seed uint64) (*encoder.Output[float32], []int) {
	rng := rand.New(rand.NewPCG(seed, 2))
	lengths := make([]int, benchRows)
	for r := range lengths {
		lengths[r] = 8 + r%12
	}
	const srcLen, md = 19, 256
	return &encoder.Output[float32]{Rows: benchRows, SrcLen: srcLen, Hidden: md / 2,
		Memory: toFloat32(gradcheck.Random(rng, benchRows*srcLen*md, 1)),
		FinalH: toFloat32(gradcheck.Random(rng, benchRows*md, 1)), FinalC: toFloat32(gradcheck.Random(rng, benchRows*md, 1))}, lengths
}

// BenchmarkSearch decodes the benchmarks' batch with one decoder: greedily (float32 products, and bfloat16 ones
// as translate uses them where the CPU has AVX512-BF16), and with a beam of 5.
func BenchmarkSearch(b *testing.B) {
	enc, lengths := benchEncoding(1)
	b.Run("greedy", func(b *testing.B) {
		d := benchDecoder(b, 1)
		for b.Loop() {
			d.Greedy(enc, lengths, queueBOS, queueEOS, benchMaxLen)
		}
	})
	b.Run("greedy-bf16", func(b *testing.B) {
		d := benchDecoder(b, 1)
		products, err := kernels.Choose(kernels.PrecisionBF16)
		if err != nil {
			b.Skip(err)
		}
		ids := make([]int, benchRows)
		for r := range ids {
			ids[r] = r
		}
		for b.Loop() {
			block := &encBlock[float32]{Enc: enc, Lengths: lengths, IDs: ids}
			d.queue(benchRows, 1, products, func() *encBlock[float32] {
				b := block
				block = nil
				return b
			}, queueBOS, queueEOS, benchMaxLen, func(int, Hypothesis) {})
		}
	})
	b.Run("beam5", func(b *testing.B) {
		d := benchDecoder(b, 1)
		for b.Loop() {
			if _, err := d.Beam(enc, lengths, queueBOS, queueEOS, BeamOptions{Width: 5, MaxLen: benchMaxLen}); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkEnsembleSearch decodes the benchmarks' batch with an ensemble of two decoders of the benchmarks'
// sizes (each with its own encoder output), greedily and with a beam of 5: about twice BenchmarkSearch's
// float32 figures, plus the log-sum-exps of the mean.
func BenchmarkEnsembleSearch(b *testing.B) {
	enc1, lengths := benchEncoding(1)
	enc2, _ := benchEncoding(2)
	encs := []*encoder.Output[float32]{enc1, enc2}
	e := newEnsemble(benchDecoder(b, 1), benchDecoder(b, 2))
	b.Run("greedy", func(b *testing.B) {
		for b.Loop() {
			e.Greedy(encs, lengths, queueBOS, queueEOS, benchMaxLen)
		}
	})
	b.Run("beam5", func(b *testing.B) {
		for b.Loop() {
			if _, err := e.Beam(encs, lengths, queueBOS, queueEOS, BeamOptions{Width: 5, MaxLen: benchMaxLen}); err != nil {
				b.Fatal(err)
			}
		}
	})
}
