package model

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/attend-nmt/attend/data"
	"github.com/attend-nmt/attend/decoder"
	G "gorgonia.org/gorgonia"
)

// testVocab returns a vocabulary of n tokens (specials included).
func testVocab(t testing.TB, n int) *data.Vocab {
	tokens := []string{data.PadToken, data.UnkToken, data.BOSToken, data.EOSToken}
	for i := len(tokens); i < n; i++ {
		tokens = append(tokens, fmt.Sprintf("w%d", i))
	}
	v, err := data.NewVocab(tokens)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// randomBatch builds a time-major batch with the given source and target lengths (one per row), drawing ids
// from rng; a source length of 0 makes a padding row.
func randomBatch(rng *rand.Rand, srcVocab, tgtVocab int, srcLens, tgtLens []int) *data.Batch {
	rows := len(srcLens)
	srcLen, tgtLen := 0, 0
	for r := range srcLens {
		srcLen = max(srcLen, srcLens[r])
		tgtLen = max(tgtLen, tgtLens[r]+1)
	}
	b := &data.Batch{Rows: rows, SrcLen: srcLen, TgtLen: tgtLen, SrcLengths: append([]int(nil), srcLens...),
		Src: make([]int, rows*srcLen), TgtIn: make([]int, rows*tgtLen), TgtOut: make([]int, rows*tgtLen)}
	for r := 0; r < rows; r++ {
		if srcLens[r] > 0 {
			b.Real++
			b.Index = append(b.Index, r)
		}
		for t := 0; t < srcLens[r]; t++ {
			b.Src[t*rows+r] = 4 + rng.IntN(srcVocab-4)
		}
		if srcLens[r] == 0 {
			continue
		}
		b.TgtIn[r] = data.BOSID
		for t := 0; t < tgtLens[r]; t++ {
			y := 4 + rng.IntN(tgtVocab-4)
			b.TgtOut[t*rows+r] = y
			b.TgtIn[(t+1)*rows+r] = y
		}
		b.TgtOut[tgtLens[r]*rows+r] = data.EOSID
	}
	return b
}

func newTestModel[T float32 | float64](t testing.TB, cfg ModelConfig, srcVocab, tgtVocab int, seed uint64) *Seq2Seq[T] {
	m, err := New[T](cfg, testVocab(t, srcVocab), testVocab(t, tgtVocab))
	if err != nil {
		t.Fatal(err)
	}
	m.Init(rand.New(rand.NewPCG(seed, 0)))
	return m
}

// TestGraphForwardMatchesPlainGo runs the gorgonia training graph and the plain-Go forward pass on the same
// weights and batch at realistic widths (decoder 512, encoder 2×256: the sizes at which gorgonia's slice hashing
// merges gate slices) and compares encoder states, attention weights of every step and the loss.
func TestGraphForwardMatchesPlainGo(t *testing.T) {
	for _, variant := range []struct {
		cell          string
		fused         bool
		feeding       bool
		selfAttention int  // model.self_attention_layers, 4 heads
		layers        int  // model.layers (0: 1)
		after         bool // model.attend_after_input
	}{{"lstm", true, false, 0, 0, false}, {"gru", true, false, 0, 0, false}, {"lstm", false, false, 0, 0, false}, {"lstm", true, true, 0, 0, false}, {"lstm", false, true, 0, 0, false},
		{"lstm", true, false, 1, 0, false}, {"gru", true, false, 1, 0, false}, {"lstm", false, false, 1, 0, false},
		{"lstm", true, false, 0, 2, false}, {"lstm", false, false, 0, 2, false}, {"gru", true, false, 0, 2, false}, {"lstm", true, true, 0, 3, false}, {"lstm", true, false, 1, 2, false},
		{"lstm", true, true, 0, 0, true}, {"lstm", false, false, 0, 0, true}} {
		cell := variant.cell
		t.Run(fmt.Sprintf("%s fused=%v input_feeding=%v self-attention=%d layers=%d attend_after_input=%v", cell, variant.fused, variant.feeding,
			variant.selfAttention, variant.layers, variant.after), func(t *testing.T) {
			cfg := ModelConfig{Emb: 64, EncHidden: 256, DecHidden: 512, AttnDim: 256, Cell: cell, Attention: "mlp",
				Heads: 4, SelfAttentionLayers: variant.selfAttention, InputFeeding: variant.feeding, Layers: variant.layers, AttendAfterInput: variant.after}
			m := newTestModel[float64](t, cfg, 40, 50, 7)
			rng := rand.New(rand.NewPCG(3, 4))
			b := randomBatch(rng, 40, 50, []int{5, 2, 4, 0}, []int{3, 4, 1, 0})

			tg, err := m.buildGraph(shape{b.Rows, b.SrcLen, b.TgtLen}, variant.fused, decoder.GraphLoss{}, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			copy(tg.src, b.Src)
			copy(tg.srcLengths, b.SrcLengths)
			copy(tg.tgtIn, b.TgtIn)
			copy(tg.tgtOut, b.TgtOut)
			if err := tg.vm.RunAll(); err != nil {
				t.Fatal(err)
			}
			enc := m.Encode(b)
			h := cfg.EncHidden
			for dir := 0; dir < 2; dir++ {
				// The unfused encoder gives batch-major states; the fused one packs them time-major.
				var got []float64
				at := func(r, i int) int { return (r*b.SrcLen + i) * h }
				if tg.encOut.Fwd != nil {
					got = nodeData([]*G.Node{tg.encOut.Fwd, tg.encOut.Bwd}[dir])
				} else {
					got = nodeData(tg.encOut.Packed[dir])
					at = func(r, i int) int { return (i*b.Rows + r) * h }
				}
				for r := 0; r < b.Rows; r++ {
					for i := 0; i < b.SrcLen; i++ {
						for j := 0; j < h; j++ {
							want := enc.Memory[(r*b.SrcLen+i)*2*h+dir*h+j]
							if d := math.Abs(got[at(r, i)+j] - want); d > 1e-9 {
								t.Fatalf("encoder dir %d row %d pos %d unit %d: graph %g, plain %g", dir, r, i, j, got[at(r, i)+j], want)
							}
						}
					}
				}
			}
			weights := m.Decoder.TeacherForced(enc, b.SrcLengths, b.TgtIn, nil, b.TgtLen, false).Weights
			if variant.fused && cell == "lstm" && tg.attention != nil {
				t.Fatal("fused graph returned per-step attention nodes: the fused decoder is not in use")
			}
			for step, node := range tg.attention {
				got := nodeData(node)
				want := weights[step*b.Rows*b.SrcLen : (step+1)*b.Rows*b.SrcLen]
				for i := range want {
					if math.Abs(got[i]-want[i]) > 1e-9 {
						t.Fatalf("attention step %d entry %d: graph %g, plain %g", step, i, got[i], want[i])
					}
				}
			}
			sum, _ := m.Loss(b)
			if got := tg.loss.Value().Data().(float64); math.Abs(got-sum) > 1e-9*math.Abs(sum) {
				t.Fatalf("loss: graph %g, plain %g", got, sum)
			}
		})
	}
}

func nodeData(n *G.Node) []float64 { return n.Value().Data().([]float64) }
