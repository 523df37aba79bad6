package transformer

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/attend-nmt/attend/data"
	"github.com/attend-nmt/attend/internal/gradcheck"
)

// maskConfig is the small model of the masking tests.
func maskConfig() Config {
	return Config{SrcVocab: 20, TgtVocab: 24, Dim: 16, Heads: 2, FF: 24, Layers: 2, Positions: Sinusoidal}
}

func TestLaterTargetWordsDoNotChangeEarlierLogits(t *testing.T) {
	cfg := maskConfig()
	m, _ := newTestModel[float64](t, cfg, 2)
	b := newTestBatch(rand.New(rand.NewPCG(3, 3)), cfg, []int{5, 4, 2}, []int{6, 6, 6}, 5, 6)
	mem := m.Encode(b.src, b.srcLengths, b.rows, b.srcLen)
	base := m.Force(mem, b.tgtIn, b.tgtLen).Logits
	v, rows := cfg.TgtVocab, b.rows
	for t0 := 1; t0 < b.tgtLen; t0++ {
		changed := slices.Clone(b.tgtIn)
		w := changed[t0*rows+1]
		changed[t0*rows+1] = 4 + (w-4+1)%(cfg.TgtVocab-4) // the next word (ids 4… are words), in row 1
		got := m.Force(mem, changed, b.tgtLen).Logits
		gradcheck.Close(t, fmt.Sprintf("logits before position %d", t0), got[:t0*rows*v], base[:t0*rows*v], 0)
		at := (t0*rows + 1) * v
		if slices.Equal(got[at:at+v], base[at:at+v]) {
			t.Errorf("changing the word at position %d left its own logits unchanged", t0)
		}
	}
}

func TestPaddingDoesNotChangeRealPositions(t *testing.T) {
	cfg := maskConfig()
	m, _ := newTestModel[float64](t, cfg, 2)
	srcLengths, tgtLengths := []int{5, 3, 1}, []int{6, 2, 4}
	b := newTestBatch(rand.New(rand.NewPCG(3, 3)), cfg, srcLengths, tgtLengths, 5, 6)
	d, v, rows := cfg.Dim, cfg.TgtVocab, b.rows
	mem := m.Encode(b.src, b.srcLengths, rows, b.srcLen)
	base := m.Force(mem, b.tgtIn, b.tgtLen).Logits
	// Other ids at every padded source position and every padded target position.
	src, tgtIn := slices.Clone(b.src), slices.Clone(b.tgtIn)
	for r := 0; r < rows; r++ {
		for i := srcLengths[r]; i < b.srcLen; i++ {
			src[i*rows+r] = 7 + r
		}
		for i := tgtLengths[r]; i < b.tgtLen; i++ {
			tgtIn[i*rows+r] = 9 + i
		}
	}
	mem2 := m.Encode(src, b.srcLengths, rows, b.srcLen)
	gradcheck.Close(t, "memory", mem2.States, mem.States, 0)
	got := m.Force(mem2, tgtIn, b.tgtLen).Logits
	for r := 0; r < rows; r++ {
		for i := 0; i < tgtLengths[r]; i++ {
			at := (i*rows + r) * v
			gradcheck.Close(t, fmt.Sprintf("logits of row %d position %d", r, i), got[at:at+v], base[at:at+v], 0)
		}
	}
	for r := 0; r < rows; r++ {
		for i := srcLengths[r]; i < b.srcLen; i++ {
			for u, x := range mem.States[(r*b.srcLen+i)*d : (r*b.srcLen+i+1)*d] {
				if x != 0 {
					t.Fatalf("memory of padded position %d of row %d has %g at %d, want 0", i, r, x, u)
				}
			}
		}
	}

	// The training loss, with dropout, reads the ids at run time: changing padded ones changes nothing.
	rng := rand.New(rand.NewPCG(5, 5))
	g := newGraphRun(t, m, b, newMasks[float64](), rng, 0.1)
	want := g.run(t, nil)
	copy(g.src, src)
	copy(g.tgtIn, tgtIn)
	if loss := g.run(t, nil); loss != want {
		t.Errorf("loss %.17g with other padded ids, %.17g before", loss, want)
	}
	g.tgtOut[0] = data.EOSID // a real target changed: the loss must change
	if loss := g.run(t, nil); loss == want {
		t.Errorf("loss %.17g unchanged after a target changed", loss)
	}
}

func TestEmptySourceRowStaysFinite(t *testing.T) {
	cfg := maskConfig()
	m, set := newTestModel[float64](t, cfg, 2)
	b := newTestBatch(rand.New(rand.NewPCG(3, 3)), cfg, []int{4, 0}, []int{3, 2}, 4, 3)
	f := m.Force(m.Encode(b.src, b.srcLengths, b.rows, b.srcLen), b.tgtIn, b.tgtLen)
	finite(t, "logits", f.Logits)
	for k, w := range f.Cross {
		for i := 0; i < b.tgtLen; i++ {
			row := w[(i*b.rows+1)*b.srcLen : (i*b.rows+2)*b.srcLen]
			if slices.ContainsFunc(row, func(x float64) bool { return x != 0 }) {
				t.Fatalf("cross map %d gives the empty source weights %v at position %d", k, row, i)
			}
		}
	}
	grads := set.ZerosLike()
	newGraphRun(t, m, b, newMasks[float64](), rand.New(rand.NewPCG(1, 2)), 0.1).run(t, grads)
	for _, p := range grads.List() {
		finite(t, p.Name, p.Data)
	}
}
