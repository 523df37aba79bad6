package transformer

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/attend-nmt/attend/internal/gradcheck"
	"github.com/attend-nmt/attend/kernels"
	"github.com/attend-nmt/attend/param"
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
// steps, so later positions reuse the last) with an untied output layer, and sinusoidal ones with a tied one.
var stepConfigs = []Config{
	{SrcVocab: 9, TgtVocab: 11, Dim: 8, Heads: 2, FF: 12, Layers: 2, Positions: Learned, MaxPositions: 5, AttentionLayer: 1},
	{SrcVocab: 9, TgtVocab: 11, Dim: 8, Heads: 2, FF: 12, Layers: 2, Positions: Sinusoidal, TieOutput: true},
}

// newTestModel returns a model of cfg whose every parameter, biases and layer-norm gains included, is drawn from
// seed: Init's weights plus noise, so that no term of the step is 0 or 1 by construction.
func newTestModel[T kernels.Float](t testing.TB, cfg Config, seed uint64) *Model[T] {
	t.Helper()
	set := param.NewSet[T]()
	m, err := New(set, cfg)
	if err != nil {
		t.Fatal(err)
	}
	set.Pack()
	rng := rand.New(rand.NewPCG(seed, 7))
	m.Init(rng)
	for _, p := range set.List() {
		for i := range p.Data {
			p.Data[i] += T(0.2 * rng.NormFloat64())
		}
	}
	return m
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

// refDecode recomputes without caches, in float64 loops, the decoder over the whole of words (BOS first) reading
// sentence g of mem: the logits of every position and the cross-attention weights of block AttentionLayer
// averaged over its heads (srcLen per position, 0 past the sentence's length).
func refDecode[T kernels.Float](m *Model[T], mem *Memory[T], g int, words []int) (logits, weights [][]float64) {
	d, nh, hd, s, length := m.Cfg.Dim, m.Cfg.Heads, m.HeadDim(), mem.SrcLen, mem.Lengths[g]
	f := func(p *param.Tensor[T]) []float64 {
		out := make([]float64, len(p.Data))
		for i, v := range p.Data {
			out[i] = float64(v)
		}
		return out
	}
	y := make([][]float64, len(words))
	for t, w := range words {
		pos := make([]float64, d)
		if m.TgtPos != nil {
			copy(pos, f(m.TgtPos)[min(t, m.Cfg.MaxPositions-1)*d:])
		} else {
			Position(pos, t)
		}
		y[t] = make([]float64, d)
		for j := range y[t] {
			y[t][j] = math.Sqrt(float64(d))*float64(m.TgtEmb.Data[w*d+j]) + pos[j]
		}
	}
	memory := make([][]float64, s)
	for i := range memory {
		memory[i] = make([]float64, d)
		for j := range memory[i] {
			memory[i][j] = float64(mem.States[(g*s+i)*d+j])
		}
	}
	// attention of queries q over keys and values k, v, query t seeing keys 0 … visible(t)-1; it returns the
	// contexts and each query's weights averaged over the heads.
	attention := func(q, k, v [][]float64, visible func(t int) int) (ctx, avg [][]float64) {
		for t := range q {
			row, a := make([]float64, d), make([]float64, len(k))
			for j := range nh {
				scores := make([]float64, visible(t))
				top := math.Inf(-1)
				for tau := range scores {
					for c := j * hd; c < (j+1)*hd; c++ {
						scores[tau] += q[t][c] * k[tau][c]
					}
					scores[tau] /= math.Sqrt(float64(hd))
					top = math.Max(top, scores[tau])
				}
				sum := 0.0
				for tau := range scores {
					scores[tau] = math.Exp(scores[tau] - top)
					sum += scores[tau]
				}
				for tau := range scores {
					w := scores[tau] / sum
					a[tau] += w / float64(nh)
					for c := j * hd; c < (j+1)*hd; c++ {
						row[c] += w * v[tau][c]
					}
				}
			}
			ctx, avg = append(ctx, row), append(avg, a)
		}
		return ctx, avg
	}
	for l, b := range m.Dec {
		h := refLayerNorm(y, f(b.Norm1.Gain), f(b.Norm1.Bias))
		ctx, _ := attention(refLinear(h, f(b.Self.QueryW), f(b.Self.QueryB)), refLinear(h, f(b.Self.KeyW), f(b.Self.KeyB)),
			refLinear(h, f(b.Self.ValueW), f(b.Self.ValueB)), func(t int) int { return t + 1 })
		refAdd(y, refLinear(ctx, f(b.Self.OutW), f(b.Self.OutB)))
		h = refLayerNorm(y, f(b.Norm2.Gain), f(b.Norm2.Bias))
		ctx, avg := attention(refLinear(h, f(b.Cross.QueryW), f(b.Cross.QueryB)), refLinear(memory, f(b.Cross.KeyW), f(b.Cross.KeyB)),
			refLinear(memory, f(b.Cross.ValueW), f(b.Cross.ValueB)), func(int) int { return length })
		if l == m.Cfg.AttentionLayer {
			weights = avg
		}
		refAdd(y, refLinear(ctx, f(b.Cross.OutW), f(b.Cross.OutB)))
		h = refLayerNorm(y, f(b.Norm3.Gain), f(b.Norm3.Bias))
		hidden := refLinear(h, f(b.FF.W1), f(b.FF.B1))
		for _, row := range hidden {
			for i := range row {
				row[i] = math.Max(row[i], 0)
			}
		}
		refAdd(y, refLinear(hidden, f(b.FF.W2), f(b.FF.B2)))
	}
	out := refLayerNorm(y, f(m.DecNorm.Gain), f(m.DecNorm.Bias))
	w := make([]float64, d*m.Cfg.TgtVocab)
	if m.OutW != nil {
		w = f(m.OutW)
	} else {
		for i, e := range f(m.TgtEmb) { // E (V, D) transposed
			w[(i%d)*m.Cfg.TgtVocab+i/d] = e
		}
	}
	return refLinear(out, w, f(m.OutB)), weights
}

// refLinear is x W + b over the rows of x, W (in, out) row-major.
func refLinear(x [][]float64, w, b []float64) [][]float64 {
	out := make([][]float64, len(x))
	for t, row := range x {
		out[t] = append([]float64(nil), b...)
		for i, xi := range row {
			for j := range b {
				out[t][j] += xi * w[i*len(b)+j]
			}
		}
	}
	return out
}

// refLayerNorm is the layer normalisation of each row of x, ε = 1e-5.
func refLayerNorm(x [][]float64, gain, bias []float64) [][]float64 {
	out := make([][]float64, len(x))
	for t, row := range x {
		mean, variance := 0.0, 0.0
		for _, v := range row {
			mean += v
		}
		mean /= float64(len(row))
		for _, v := range row {
			variance += (v - mean) * (v - mean)
		}
		variance /= float64(len(row))
		out[t] = make([]float64, len(row))
		for j, v := range row {
			out[t][j] = (v-mean)/math.Sqrt(variance+1e-5)*gain[j] + bias[j]
		}
	}
	return out
}

// refAdd adds d to y, row by row.
func refAdd(y, d [][]float64) {
	for t := range y {
		for j := range y[t] {
			y[t][j] += d[t][j]
		}
	}
}

// lineage is what a row of a state being tested has decoded: the words it stepped from (BOS first) and the
// sentence it reads.
type lineage struct {
	words []int
	sent  int
}

// checkStep steps st from a random next word of each row (BOS at the first step), appends it to the row's
// lineage and compares the step's logits and weights with refDecode's of the row's words.
func checkStep[T kernels.Float](t *testing.T, m *Model[T], mem *Memory[T], st *State[T], rows []lineage, rng *rand.Rand, bos int) {
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
		refLogits, refWeights := refDecode(m, mem, row.sent, row.words)
		pos := len(row.words) - 1
		name := fmt.Sprintf("position %d, row %d (sentence %d)", pos, r, row.sent)
		gradcheck.Close(t, name+" logits", toF64(logits[r*v:(r+1)*v]), refLogits[pos], stepTol[T]())
		want := make([]float64, s)
		copy(want, refWeights[pos])
		got := toF64(weights[r*s : (r+1)*s])
		gradcheck.Close(t, name+" weights", got, want, stepTol[T]())
		for i := mem.Lengths[row.sent]; i < s; i++ {
			if got[i] != 0 {
				t.Errorf("%s: weight %g past the source length %d", name, got[i], mem.Lengths[row.sent])
			}
		}
	}
}

// toF64 converts x to float64.
func toF64[T kernels.Float](x []T) []float64 {
	out := make([]float64, len(x))
	for i, v := range x {
		out[i] = float64(v)
	}
	return out
}

// testStepMatchesReference checks 18 steps of three rows of different source lengths (more steps than the
// caches first hold and than the learned positions) against refDecode.
func testStepMatchesReference[T kernels.Float](t *testing.T) {
	for c, cfg := range stepConfigs {
		t.Run(cfg.Positions, func(t *testing.T) {
			m := newTestModel[T](t, cfg, uint64(c+1))
			mem := newTestMemory[T]([]int{5, 2, 4}, 5, cfg.Dim, uint64(c+1))
			st := m.Start(mem)
			rows := []lineage{{sent: 0}, {sent: 1}, {sent: 2}}
			rng := rand.New(rand.NewPCG(uint64(c+1), 3))
			for range minPositions + 2 {
				checkStep(t, m, mem, st, rows, rng, 1)
			}
		})
	}
}

// TestStepMatchesReference checks that Step's logits and averaged cross-attention equal a recomputation of the
// whole prefix without caches, position after position, in float64 and float32.
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
			m := newTestModel[T](t, cfg, uint64(c+11))
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
				checkStep(t, m, mem, st, rows, rng, 1)
			}
			reorder([]int{2, 0, 2, 1, 0})
			for range 3 {
				checkStep(t, m, mem, st, rows, rng, 1)
			}
			reorder([]int{1, 3, 4})
			checkStep(t, m, mem, st, rows, rng, 1)
			reorder([]int{0, 2})
			for range minPositions {
				checkStep(t, m, mem, st, rows, rng, 1)
			}
		})
	}
}

// TestReorderContinues checks that a reordered state continues exactly as the rows it copies would.
func TestReorderContinues(t *testing.T) {
	t.Run("float64", testReorderContinues[float64])
	t.Run("float32", testReorderContinues[float32])
}

// TestStepAllocatesNothing checks that once the caches have room, a step and a reorder in order allocate
// nothing.
func TestStepAllocatesNothing(t *testing.T) {
	cfg := stepConfigs[0]
	m := newTestModel[float32](t, cfg, 5)
	mem := newTestMemory[float32]([]int{5, 2, 4}, 5, cfg.Dim, 5)
	st := m.Start(mem)
	prev := []int{1, 1, 1}
	logits, weights := make([]float32, 3*cfg.TgtVocab), make([]float32, 3*5)
	m.Step(st, prev, logits, weights)
	if allocs := testing.AllocsPerRun(5, func() { m.Step(st, prev, logits, weights) }); allocs != 0 {
		t.Errorf("a step allocates %v times", allocs)
	}
	st.Reorder([]int{0, 2})
	if allocs := testing.AllocsPerRun(5, func() { st.Reorder([]int{0, 1}) }); allocs != 0 {
		t.Errorf("an in-order reorder allocates %v times", allocs)
	}
}
