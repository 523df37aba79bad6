package transformer

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/attend-nmt/attend/internal/gradcheck"
	"github.com/attend-nmt/attend/kernels"
)

// Tolerances of Step against the plain-loop reference (relative to max(1, |value|)).
const (
	stepTol64 = 1e-12 // summation order only (about 1e-14 seen)
	stepTol32 = 2e-5  // float32 against float64 loops (about 2e-6 seen)
)

// stepTol is the tolerance of T.
func stepTol[T kernels.Float]() float64 {
	var x T
	if _, ok := any(x).(float32); ok {
		return stepTol32
	}
	return stepTol64
}

// stepConfigs are the shapes the step tests run on: 2 blocks of 2 heads, learned positions (fewer than the
// steps, so later positions reuse the last) with an untied output layer, reporting the second block's second
// head, and sinusoidal ones with a tied one, reporting the last block's heads' average.
var stepConfigs = []Config{
	{SrcVocab: 9, TgtVocab: 11, Dim: 8, Heads: 2, FF: 12, Layers: 2, Positions: Learned, MaxPositions: 5, AttentionLayer: 1, AlignmentHead: 2},
	{SrcVocab: 9, TgtVocab: 11, Dim: 8, Heads: 2, FF: 12, Layers: 2, Positions: Sinusoidal, TieOutput: true},
}

// stepModel is newTestModel's model of cfg drawn from seed, and its plain-loop reference.
func stepModel[T kernels.Float](t testing.TB, cfg Config, seed uint64) (*Model[T], reference) {
	t.Helper()
	m, set := newTestModel[T](t, cfg, seed)
	return m, newReference(cfg, set)
}

// newTestMemory returns a random memory of len(lengths) sentences padded to srcLen positions, the states past
// each sentence's length 0.
func newTestMemory[T kernels.Float](lengths []int, srcLen, d int, seed uint64) *Memory[T] {
	rng := rand.New(rand.NewPCG(seed, 9))
	mem := &Memory[T]{Rows: len(lengths), SrcLen: srcLen, Lengths: lengths, States: make([]T, len(lengths)*srcLen*d)}
	for r, l := range lengths {
		for i := range l * d {
			mem.States[r*srcLen*d+i] = T(rng.NormFloat64())
		}
	}
	return mem
}

// refDecode recomputes without caches, with the plain-loop reference, the decoder over the whole of words (BOS
// first) reading sentence g of mem: the logits of every position and the cross-attention weights of block
// AttentionLayer averaged over its heads, or of head AlignmentHead alone (srcLen per position, 0 past the
// sentence's length).
func refDecode[T kernels.Float](m *Model[T], ref reference, mem *Memory[T], g int, words []int) (logits, weights [][]float64) {
	d, s, length := m.Cfg.Dim, mem.SrcLen, mem.Lengths[g]
	memory := make([][]float64, length)
	for i := range memory {
		memory[i] = widen(mem.States[(g*s+i)*d : (g*s+i+1)*d])
	}
	logits, cross := ref.decode(words, memory)
	for pos := range words {
		reported := make([]float64, s)
		for j, head := range cross[m.Cfg.AttentionLayer] {
			if m.Cfg.AlignmentHead > 0 && j != m.Cfg.AlignmentHead-1 {
				continue
			}
			for i, w := range head[pos] {
				if m.Cfg.AlignmentHead > 0 {
					reported[i] = w
				} else {
					reported[i] += w / float64(m.Cfg.Heads)
				}
			}
		}
		weights = append(weights, reported)
	}
	return logits, weights
}

// lineage is what a row of a state being tested has decoded: the words it stepped from (BOS first) and the
// sentence it reads.
type lineage struct {
	words []int
	sent  int
}

// checkStep steps st from a random next word of each row (BOS at the first step), appends it to the row's
// lineage and compares the step's logits and weights with refDecode's of the row's words.
func checkStep[T kernels.Float](t *testing.T, m *Model[T], ref reference, mem *Memory[T], st *State[T], rows []lineage, rng *rand.Rand, bos int) {
	t.Helper()
	n, v, s := st.Rows, m.Cfg.TgtVocab, mem.SrcLen
	prev := make([]int, n)
	for r := range rows {
		prev[r] = bos
		if len(rows[r].words) > 0 {
			prev[r] = rng.IntN(v)
		}
		rows[r].words = append(rows[r].words, prev[r])
	}
	logits, weights := make([]T, n*v), make([]T, n*s)
	m.Step(st, prev, logits, weights)
	for r, row := range rows {
		refLogits, refWeights := refDecode(m, ref, mem, row.sent, row.words)
		pos := len(row.words) - 1
		name := fmt.Sprintf("position %d, row %d (sentence %d)", pos, r, row.sent)
		gradcheck.Close(t, name+" logits", widen(logits[r*v:(r+1)*v]), refLogits[pos], stepTol[T]())
		want := make([]float64, s)
		copy(want, refWeights[pos])
		got := widen(weights[r*s : (r+1)*s])
		gradcheck.Close(t, name+" weights", got, want, stepTol[T]())
		for i := mem.Lengths[row.sent]; i < s; i++ {
			if got[i] != 0 {
				t.Errorf("%s: weight %g past the source length %d", name, got[i], mem.Lengths[row.sent])
			}
		}
	}
}

// testStepMatchesReference checks 18 steps of three rows of different source lengths (more steps than the
// caches first hold and than the learned positions) against refDecode.
func testStepMatchesReference[T kernels.Float](t *testing.T) {
	for c, cfg := range stepConfigs {
		t.Run(cfg.Positions, func(t *testing.T) {
			m, ref := stepModel[T](t, cfg, uint64(c+1))
			mem := newTestMemory[T]([]int{5, 0, 2, 4}, 5, cfg.Dim, uint64(c+1))
			st := m.Start(mem)
			rows := []lineage{{sent: 0}, {sent: 1}, {sent: 2}, {sent: 3}}
			rng := rand.New(rand.NewPCG(uint64(c+1), 3))
			for range minPositions + 2 {
				checkStep(t, m, ref, mem, st, rows, rng, 1)
			}
		})
	}
}

// TestStepMatchesReference checks that Step's logits and reported cross-attention (the heads' average, or the
// alignment head's alone) equal a recomputation of the whole prefix without caches, position after position, in
// float64 and float32.
func TestStepMatchesReference(t *testing.T) {
	t.Run("float64", testStepMatchesReference[float64])
	t.Run("float32", testStepMatchesReference[float32])
}

// testReorderContinues reorders a state three ways — gathering rows out of order into more rows than it had,
// dropping rows in order (in place), and growing the caches' positions afterwards — and checks every later
// step against refDecode of the words each new row's old row had decoded, followed by its own.
func testReorderContinues[T kernels.Float](t *testing.T) {
	for c, cfg := range stepConfigs {
		t.Run(cfg.Positions, func(t *testing.T) {
			m, ref := stepModel[T](t, cfg, uint64(c+11))
			mem := newTestMemory[T]([]int{3, 5, 1}, 5, cfg.Dim, uint64(c+11))
			st := m.Start(mem)
			rows := []lineage{{sent: 0}, {sent: 1}, {sent: 2}}
			rng := rand.New(rand.NewPCG(uint64(c+11), 3))
			reorder := func(from []int) {
				next := make([]lineage, len(from))
				for r, f := range from {
					next[r] = lineage{words: append([]int(nil), rows[f].words...), sent: rows[f].sent}
				}
				rows = next
				st.Reorder(from)
				if st.Rows != len(from) {
					t.Fatalf("Reorder(%v): %d rows", from, st.Rows)
				}
			}
			for range 3 {
				checkStep(t, m, ref, mem, st, rows, rng, 1)
			}
			reorder([]int{2, 0, 2, 1, 0})
			for range 3 {
				checkStep(t, m, ref, mem, st, rows, rng, 1)
			}
			reorder([]int{1, 3, 4})
			checkStep(t, m, ref, mem, st, rows, rng, 1)
			reorder([]int{0, 2})
			for range minPositions {
				checkStep(t, m, ref, mem, st, rows, rng, 1)
			}
		})
	}
}

// TestReorderContinues checks that a reordered state continues exactly as the rows it copies would.
func TestReorderContinues(t *testing.T) {
	t.Run("float64", testReorderContinues[float64])
	t.Run("float32", testReorderContinues[float32])
}

// TestStepAllocatesNothing checks that once the caches have room, a step and a reorder (in order, or out of
// order once the spare caches exist) allocate nothing.
func TestStepAllocatesNothing(t *testing.T) {
	cfg := stepConfigs[0]
	m, _ := newTestModel[float32](t, cfg, 5)
	mem := newTestMemory[float32]([]int{5, 2, 4}, 5, cfg.Dim, 5)
	st := m.Start(mem)
	prev := []int{1, 1, 1}
	logits, weights := make([]float32, 3*cfg.TgtVocab), make([]float32, 3*5)
	m.Step(st, prev, logits, weights)
	if allocs := testing.AllocsPerRun(5, func() { m.Step(st, prev, logits, weights) }); allocs != 0 {
		t.Errorf("a step allocates %v times", allocs)
	}
	st.Reorder([]int{2, 0, 1}) // the first reorder out of order makes the spare caches
	if allocs := testing.AllocsPerRun(5, func() { st.Reorder([]int{1, 2, 0}) }); allocs != 0 {
		t.Errorf("a reorder out of order allocates %v times", allocs)
	}
	st.Reorder([]int{0, 2})
	if allocs := testing.AllocsPerRun(5, func() { st.Reorder([]int{0, 1}) }); allocs != 0 {
		t.Errorf("an in-order reorder allocates %v times", allocs)
	}
}

// testStepMatchesForce steps a batch's target inputs position by position and checks the logits and the reported
// cross-attention (the heads' average, or the alignment head's) against Force's teacher-forced pass over the same memory (from Encode), rows of every source
// length including an empty one.
func testStepMatchesForce[T kernels.Float](t *testing.T) {
	for c, cfg := range stepConfigs {
		t.Run(cfg.Positions, func(t *testing.T) {
			m, _ := newTestModel[T](t, cfg, uint64(c+21))
			b := newTestBatch(rand.New(rand.NewPCG(uint64(c+21), 1)), cfg, []int{5, 3, 0, 4}, []int{7, 2, 4, 7}, 5, 7)
			mem := m.Encode(b.src, b.srcLengths, b.rows, b.srcLen)
			f := m.Force(mem, b.tgtIn, b.tgtLen)
			st := m.Start(mem)
			v, s, nh := cfg.TgtVocab, b.srcLen, cfg.Heads
			logits, weights := make([]T, b.rows*v), make([]T, b.rows*s)
			for pos := 0; pos < b.tgtLen; pos++ {
				at := pos * b.rows // Force's rows of the position
				m.Step(st, b.tgtIn[at:at+b.rows], logits, weights)
				gradcheck.Close(t, fmt.Sprintf("position %d logits", pos), widen(logits), widen(f.Logits[at*v:(at+b.rows)*v]), stepTol[T]())
				want := make([]float64, b.rows*s)
				for j := 0; j < nh; j++ {
					for i, w := range f.Cross[cfg.AttentionLayer*nh+j][at*s : (at+b.rows)*s] {
						switch cfg.AlignmentHead {
						case 0:
							want[i] += float64(w) / float64(nh)
						case j + 1:
							want[i] = float64(w)
						}
					}
				}
				gradcheck.Close(t, fmt.Sprintf("position %d weights", pos), widen(weights), want, stepTol[T]())
			}
		})
	}
}

// TestStepMatchesForce: step-by-step decoding gives the training pass's logits and attention.
func TestStepMatchesForce(t *testing.T) {
	t.Run("float64", testStepMatchesForce[float64])
	t.Run("float32", testStepMatchesForce[float32])
}
