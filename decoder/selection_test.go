package decoder

import (
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
)

// TestBeamSelectionIsBeam drives a decoder's Step through BeamSelection, reordering its state and memory row by
// row as From says, and checks that the n-best lists are exactly Beam's, with length and coverage penalties,
// n-best lists shorter than the beam (early stops) and length limits from the source lengths.
func TestBeamSelectionIsBeam(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	lengths := []int{3, 1, 6, 4, 9, 2}
	enc := randomBlocks(rng, [][]int{lengths})[0].Enc
	for seed := uint64(1); seed <= 6; seed++ {
		d := testDecoder(t, queueVocab, seed)
		for _, opts := range []BeamOptions{{Width: 1, MaxLen: 12}, {Width: 3, NBest: 3, MaxLen: 14, Alpha: 0.6},
			{Width: 4, NBest: 2, MaxLen: 14, Beta: 0.2}, {Width: 2, NBest: 2, MaxLen: 20, MaxLenRatio: 1.5, Alpha: 1, Beta: 0.4}} {
			want, err := d.Beam(enc, lengths, queueBOS, queueEOS, opts)
			if err != nil {
				t.Fatal(err)
			}
			sel, err := NewBeamSelection[float64](lengths, enc.SrcLen, queueVocab, queueBOS, queueEOS, opts)
			if err != nil {
				t.Fatal(err)
			}
			rows, srcLen := len(lengths)*opts.Width, enc.SrcLen
			mem, st := d.Start(enc, slices.Clone(lengths))
			states := [2]*State[float64]{d.newState(rows, srcLen), d.newState(rows, srcLen)}
			mems := [2]*Memory[float64]{repeatMemory(mem, opts.Width), repeatMemory(mem, opts.Width)}
			buf := d.NewScratch(rows, srcLen)
			logits, weights := make([]float64, rows*queueVocab), make([]float64, rows*srcLen)
			for i := 0; sel.Rows() > 0; i ^= 1 {
				n := sel.Rows()
				st.Rows, mem.Rows = n, n
				d.Step(st, sel.Prev(), mem, buf, logits[:n*queueVocab], weights[:n*srcLen])
				if !sel.Choose(logits, weights) {
					break
				}
				from := sel.From()
				next, nextMem := states[i], mems[i]
				next.Rows, nextMem.Rows = len(from), len(from)
				for r, f := range from {
					next.CopyRow(r, st, f)
					nextMem.CopyRow(r, mem, f)
				}
				st, mem = next, nextMem
			}
			if got := sel.Best(); !reflect.DeepEqual(got, want) {
				for s := range want {
					t.Logf("sentence %d: got %v, want %v", s, scoredKeys(got[s]), scoredKeys(want[s]))
				}
				t.Fatalf("seed %d, %+v: BeamSelection's n-best lists differ from Beam's", seed, opts)
			}
		}
	}
}
