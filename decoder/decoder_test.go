package decoder

import (
	"github.com/attend-nmt/attend/align"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/attend-nmt/attend/encoder"
	"github.com/attend-nmt/attend/internal/gradcheck"
	"github.com/attend-nmt/attend/param"
)

// TestStepAllocatesNothing checks that a decoding step works in the scratch NewScratch made: translation calls
// it once per output word.
func TestStepAllocatesNothing(t *testing.T) {
	for _, name := range append(align.Names(), "mlp", "additive+input-feeding", "additive+layers", "additive+input-feeding+layers+after") {
		t.Run(name, func(t *testing.T) {
			attention, after := strings.CutSuffix(name, "+after") // attending after the LSTM reads y_{t-1}
			attention, layered := strings.CutSuffix(attention, "+layers")
			attention, feeding := strings.CutSuffix(attention, "+input-feeding")
			layers := 1
			if layered {
				layers = 3
			}
			rng := rand.New(rand.NewPCG(1, 2))
			set := param.NewSet[float32]()
			d, err := New(set, Config{Vocab: 11, Emb: 4, Hidden: 6, MemDim: 8, Attn: 6, Attention: attention, Window: 2, Heads: 2, Temperature: 1,
				InputFeeding: feeding, Layers: layers, AttendAfterInput: after}, nil)
			if err != nil {
				t.Fatal(err)
			}
			d.Init(rng)
			rows, srcLen := 3, 5
			enc := &encoder.Output[float32]{Rows: rows, SrcLen: srcLen, Hidden: 4,
				Memory: toFloat32(gradcheck.Random(rng, rows*srcLen*8, 1)),
				FinalH: toFloat32(gradcheck.Random(rng, rows*8, 1)), FinalC: toFloat32(gradcheck.Random(rng, rows*8, 1))}
			mem, st := d.Start(enc, []int{5, 2, 4})
			buf := d.NewScratch(rows, srcLen)
			logits, weights := make([]float32, rows*11), make([]float32, rows*srcLen)
			prev := []int{1, 2, 3}
			if allocs := testing.AllocsPerRun(20, func() { d.Step(st, prev, mem, buf, logits, weights) }); allocs != 0 {
				t.Fatalf("Step allocates %.1f times per call, want 0", allocs)
			}
		})
	}
}

func toFloat32(x []float64) []float32 {
	out := make([]float32, len(x))
	for i, v := range x {
		out[i] = float32(v)
	}
	return out
}
