package decoder

import (
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/attend-nmt/attend/encoder"
)

// selectionOptions are the beam options of the BeamSelection tests: length and coverage penalties, n-best lists
// shorter than the beam (early stops) and length limits from the source lengths.
var selectionOptions = []BeamOptions{{Width: 1, MaxLen: 12}, {Width: 3, NBest: 3, MaxLen: 14, Alpha: 0.6},
	{Width: 4, NBest: 2, MaxLen: 14, Beta: 0.2}, {Width: 2, NBest: 2, MaxLen: 20, MaxLenRatio: 1.5, Alpha: 1, Beta: 0.4}}

// selectionBeam drives the decoders ds' Steps through a BeamSelection ranking by meanOf members (NewBeamSelection),
// each decoder reading its own encoder output encs[i] and reordering its own state and memory row by row as From
// says, and returns the n-best lists; the attention kept is the first decoder's.
func selectionBeam(t *testing.T, ds []*Decoder[float64], encs []*encoder.Output[float64], lengths []int, opts BeamOptions, meanOf int) [][]Scored {
	t.Helper()
	srcLen := encs[0].SrcLen
	sel, err := NewBeamSelection[float64](lengths, srcLen, queueVocab, queueBOS, queueEOS, opts, meanOf)
	if err != nil {
		t.Fatal(err)
	}
	rows := len(lengths) * opts.Width
	type member struct { // a decoder's state and memory of the step, and two of rows rows to reorder them into
		st     *State[float64]
		mem    *Memory[float64]
		states [2]*State[float64]
		mems   [2]*Memory[float64]
		buf    *Scratch[float64]
	}
	members, logits := make([]member, len(ds)), make([][]float64, len(ds))
	weights := make([]float64, rows*srcLen) // the first decoder's; the others' are scratch
	for i, d := range ds {
		mem, st := d.Start(encs[i], slices.Clone(lengths))
		members[i] = member{st: st, mem: mem, states: [2]*State[float64]{d.newState(rows, srcLen), d.newState(rows, srcLen)},
			mems: [2]*Memory[float64]{repeatMemory(mem, opts.Width), repeatMemory(mem, opts.Width)}, buf: d.NewScratch(rows, srcLen)}
		logits[i] = make([]float64, rows*queueVocab)
	}
	scratch := make([]float64, rows*srcLen)
	for j := 0; sel.Rows() > 0; j ^= 1 {
		n := sel.Rows()
		for i, d := range ds {
			m, w := &members[i], weights
			if i > 0 {
				w = scratch
			}
			m.st.Rows, m.mem.Rows = n, n
			d.Step(m.st, sel.Prev(), m.mem, m.buf, logits[i][:n*queueVocab], w[:n*srcLen])
		}
		if !sel.Choose(logits, weights) {
			break
		}
		from := sel.From()
		for i := range members {
			m := &members[i]
			next, nextMem := m.states[j], m.mems[j]
			next.Rows, nextMem.Rows = len(from), len(from)
			for r, f := range from {
				next.CopyRow(r, m.st, f)
				nextMem.CopyRow(r, m.mem, f)
			}
			m.st, m.mem = next, nextMem
		}
	}
	return sel.Best()
}

// checkSameLists fails the test when got and want, n-best lists of every sentence, differ.
func checkSameLists(t *testing.T, what string, got, want [][]Scored) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		for s := range want {
			t.Logf("sentence %d: got %v, want %v", s, scoredKeys(got[s]), scoredKeys(want[s]))
		}
		t.Fatalf("%s: BeamSelection's n-best lists differ", what)
	}
}

// TestBeamSelectionIsBeam drives a decoder's Step through BeamSelection and checks that the n-best lists are
// exactly Beam's, with length and coverage penalties, n-best lists shorter than the beam (early stops) and
// length limits from the source lengths; ranking the mean of one member (1) gives them too.
func TestBeamSelectionIsBeam(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	lengths := []int{3, 1, 6, 4, 9, 2}
	enc := randomBlocks(rng, [][]int{lengths})[0].Enc
	for seed := uint64(1); seed <= 6; seed++ {
		d := testDecoder(t, queueVocab, seed)
		for _, opts := range selectionOptions {
			want, err := d.Beam(enc, lengths, queueBOS, queueEOS, opts)
			if err != nil {
				t.Fatal(err)
			}
			for meanOf := range 2 {
				checkSameLists(t, "one decoder", selectionBeam(t, []*Decoder[float64]{d}, []*encoder.Output[float64]{enc}, lengths, opts, meanOf), want)
			}
		}
	}
}

// TestBeamSelectionIsEnsembleBeam drives two decoders' Steps through a BeamSelection ranking their mean and checks
// that the n-best lists are exactly Ensemble.Beam's.
func TestBeamSelectionIsEnsembleBeam(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 3))
	lengths := []int{3, 1, 6, 4, 9, 2}
	blocks := randomBlocks(rng, [][]int{lengths, lengths})
	encs := []*encoder.Output[float64]{blocks[0].Enc, blocks[1].Enc}
	for seed := uint64(1); seed <= 4; seed++ {
		ds := []*Decoder[float64]{testDecoder(t, queueVocab, seed), testDecoder(t, queueVocab, seed+10)}
		e, err := NewEnsemble(ds...)
		if err != nil {
			t.Fatal(err)
		}
		for _, opts := range selectionOptions {
			want, err := e.Beam(encs, lengths, queueBOS, queueEOS, opts)
			if err != nil {
				t.Fatal(err)
			}
			alone, err := ds[0].Beam(encs[0], lengths, queueBOS, queueEOS, opts)
			if err != nil {
				t.Fatal(err)
			}
			if reflect.DeepEqual(alone, want) {
				t.Fatalf("seed %d, %+v: the ensemble's lists are its first decoder's: the test cannot tell them apart", seed, opts)
			}
			checkSameLists(t, "two decoders", selectionBeam(t, ds, encs, lengths, opts, 2), want)
		}
	}
}
