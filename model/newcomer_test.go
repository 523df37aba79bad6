package model

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/attend-nmt/attend/align"
	"github.com/attend-nmt/attend/data"
	"github.com/attend-nmt/attend/decoder"
	"github.com/attend-nmt/attend/dist"
	"github.com/attend-nmt/attend/graph"
	"github.com/attend-nmt/attend/kernels"
	"github.com/attend-nmt/attend/param"
	G "gorgonia.org/gorgonia"
)

// coverage is the score a newcomer adds in docs/extending.md, written here, in a test file, through the registry
// alone: the dot score of the projected query, less a learned multiple of the attention each word has had so far
// (a coverage score with a state, as in Tu et al. 2016):
//
//	e_ti = (s_{t-1} W)ᵀ h_i − u · cov_ti,   cov_t = cov_{t-1} + a_t   (cov_0 = 0: the state, one value per word)
type coverage[T kernels.Float] struct {
	memDim, queryDim int
	w                *param.Tensor[T] // (QueryDim, MemDim)
	u                *param.Tensor[T] // (1)
}

var (
	_ align.Scorer[float64]   = (*coverage[float64])(nil)
	_ align.Stateful[float64] = (*coverage[float64])(nil)
)

func newCoverage[T kernels.Float](set *param.Set[T], cfg align.Config) (align.Attention[T], error) {
	return align.NewSoft[T](&coverage[T]{memDim: cfg.MemDim, queryDim: cfg.QueryDim,
		w: set.Add("attn.w", cfg.QueryDim, cfg.MemDim), u: set.Add("attn.u", 1)}), nil
}

func (c *coverage[T]) Params() []*param.Tensor[T] { return []*param.Tensor[T]{c.w, c.u} }

func (c *coverage[T]) Init(rng *rand.Rand) {
	param.Uniform(c.w, param.InvSqrt(c.queryDim), rng)
	c.u.Data[0] = 1
}

func (c *coverage[T]) KeyWidth() int { return c.memDim }

func (c *coverage[T]) Keys(memory []T, lengths []int, rows, srcLen int, keys []T) { copy(keys, memory) }

func (c *coverage[T]) KeysBackward(memory, dKeys []T, rows, srcLen int, dMemory []T, grads [][]T) {
	for i, g := range dKeys {
		dMemory[i] += g
	}
}

// WorkSize is q = s W and its gradient, (rows, MemDim) each.
func (c *coverage[T]) WorkSize(rows, srcLen int) int { return 2 * rows * c.memDim }

func (c *coverage[T]) Score(query, keys, state []T, rows, srcLen int, scores, work []T) {
	m, q := c.memDim, work[:rows*c.memDim]
	kernels.Linear(query, c.w.Data, rows, c.queryDim, m, q, m)
	for r := 0; r < rows; r++ {
		for i := 0; i < srcLen; i++ {
			e := -c.u.Data[0] * state[r*srcLen+i]
			for j, k := range keys[(r*srcLen+i)*m : (r*srcLen+i+1)*m] {
				e += q[r*m+j] * k
			}
			scores[r*srcLen+i] = e
		}
	}
}

func (c *coverage[T]) ScoreBackward(query, keys, state, work, dScores []T, rows, srcLen int, dQuery, dKeys, dState []T, grads [][]T) {
	m, q, dq := c.memDim, work[:rows*c.memDim], work[rows*c.memDim:]
	clear(dq)
	for r := 0; r < rows; r++ {
		for i := 0; i < srcLen; i++ {
			// forward: e = qᵀ k_i − u · cov_i
			de := dScores[r*srcLen+i]
			dState[r*srcLen+i] -= c.u.Data[0] * de
			grads[1][0] -= de * state[r*srcLen+i]
			for j := 0; j < m; j++ {
				dq[r*m+j] += de * keys[(r*srcLen+i)*m+j]
				dKeys[(r*srcLen+i)*m+j] += de * q[r*m+j]
			}
		}
	}
	// forward: q = s W
	kernels.LinearBackward(query, c.w.Data, dq, rows, c.queryDim, m, m, dQuery, grads[0])
}

func (c *coverage[T]) StateWidth() int { return 1 }

func (c *coverage[T]) NextState(state, weights []T, rows, srcLen int, next []T) {
	for i := range next {
		next[i] = state[i] + weights[i]
	}
}

func (c *coverage[T]) NextStateBackward(state, weights, dNext []T, rows, srcLen int, dState, dWeights []T) {
	for i, g := range dNext {
		dState[i] += g
		dWeights[i] += g
	}
}

func (c *coverage[T]) GraphNextState(state, weights *G.Node) *G.Node {
	return G.Must(G.Add(state, weights))
}

func (c *coverage[T]) Graph(p *graph.Params[T], rows, srcLen int) align.GraphScorer {
	return &graphCoverage[T]{c: c, w: p.Whole(c.w), u: p.Whole(c.u), rows: rows, srcLen: srcLen}
}

type graphCoverage[T kernels.Float] struct {
	c            *coverage[T]
	w, u         *G.Node
	rows, srcLen int
}

func (g *graphCoverage[T]) Keys(memory *G.Node, lengths *[]int) *G.Node { return memory }

func (g *graphCoverage[T]) Score(query, keys, state *G.Node) *G.Node {
	q := G.Must(G.Reshape(G.Must(G.Mul(query, g.w)), []int{g.rows, g.c.memDim, 1}))
	e := G.Must(G.Reshape(G.Must(G.BatchedMatMul(keys, q)), []int{g.rows, g.srcLen}))
	penalty := G.Must(G.BroadcastHadamardProd(state, G.Must(G.Reshape(g.u, []int{1, 1})), nil, []byte{0, 1}))
	return G.Must(G.Sub(e, penalty))
}

// newcomerModel is a tiny model whose attention is the coverage score, found by name in the built-in registry
// with the score added.
func newcomerModel(t *testing.T, feeding bool, layers int, after bool) *Seq2Seq[float64] {
	scores := append(align.Builtin[float64](), align.Entry[float64]{Name: "coverage", New: newCoverage[float64]})
	cfg := ModelConfig{Emb: 3, EncHidden: 4, DecHidden: 5, Cell: "lstm", Attention: "coverage", Dropout: 0.25, InputFeeding: feeding, Layers: layers,
		AttendAfterInput: after}
	m, err := newModel(cfg, testVocab(t, 9), testVocab(t, 11), param.NewSet[float64](), scores)
	if err != nil {
		t.Fatal(err)
	}
	m.Init(rand.New(rand.NewPCG(1, 0)))
	return m
}

// TestNewcomerScoreTrainsThroughTheRegistry adds a score with a state (coverage, above) through the registry
// alone and requires of it what every built-in score gets: the fused training op's gradient equals the unfused
// graph's and central differences, a few steps of training lower the loss, and the searches carry its state
// (greedy search of a batch gives each sentence the words it gets alone, and beam search of width 1 is greedy
// search). It does so in both orders of attention and LSTM: the state is carried from step to step either way.
func TestNewcomerScoreTrainsThroughTheRegistry(t *testing.T) {
	for _, variant := range []struct {
		feeding bool
		layers  int
		after   bool // model.attend_after_input
	}{{false, 1, false}, {true, 2, false}, {false, 1, true}} {
		t.Run(fmt.Sprintf("input_feeding=%v layers=%d attend_after_input=%v", variant.feeding, variant.layers, variant.after), func(t *testing.T) {
			m := newcomerModel(t, variant.feeding, variant.layers, variant.after)
			b := randomBatch(rand.New(rand.NewPCG(5, 6)), 9, 11, []int{3, 1, 4, 0}, []int{2, 3, 1, 0})
			masks := func() *rand.Rand { return rand.New(rand.NewPCG(9, 9)) } // the same dropout masks every run
			gradients := func(unfused bool) (float64, [][]float64) {
				tr := NewTrainer(m, 1e-3, 0, 1)
				tr.Unfused = unfused
				res, err := tr.Gradients(b, masks())
				if err != nil {
					t.Fatal(err)
				}
				var grads [][]float64
				for _, g := range tr.Grads.List() {
					grads = append(grads, slices.Clone(g.Data))
				}
				return res.Loss, grads
			}
			loss, fused := gradients(false)
			plainLoss, plain := gradients(true)
			if math.Abs(loss-plainLoss) > 1e-12*math.Abs(plainLoss) {
				t.Fatalf("loss: fused %.15g, unfused %.15g", loss, plainLoss)
			}
			const eps = 1e-5
			pick := rand.New(rand.NewPCG(2, 2))
			for i, p := range m.Params.List() {
				for n := 0; n < 6; n++ {
					j := pick.IntN(len(p.Data))
					if math.Abs(fused[i][j]-plain[i][j]) > 1e-10*(1+math.Abs(plain[i][j])) {
						t.Fatalf("%s[%d]: fused %.12g, unfused %.12g", p.Name, j, fused[i][j], plain[i][j])
					}
					orig := p.Data[j]
					p.Data[j] = orig + eps
					up, _ := gradients(false)
					p.Data[j] = orig - eps
					down, _ := gradients(false)
					p.Data[j] = orig
					numeric := (up - down) / (2 * eps)
					if rel := math.Abs(fused[i][j]-numeric) / math.Max(math.Max(math.Abs(fused[i][j]), math.Abs(numeric)), 1e-3); rel > 1e-5 {
						t.Errorf("%s[%d]: backprop %.10g, finite differences %.10g (rel. error %.2g)", p.Name, j, fused[i][j], numeric, rel)
					}
				}
			}

			tr := NewTrainer(m, 1e-2, 1, 1)
			rng := rand.New(rand.NewPCG(3, 3))
			first, last := 0.0, 0.0
			for step := 0; step < 40; step++ {
				res, err := tr.Step(b, rng, dist.Single{})
				if err != nil {
					t.Fatal(err)
				}
				if step == 0 {
					first = res.Loss
				}
				last = res.Loss
			}
			if !(last < 0.7*first) {
				t.Fatalf("40 steps took the loss from %.4f to %.4f, want below 70%% of the start", first, last)
			}

			greedy := m.Greedy(b, 6)
			beam, err := beamOf(m, b, decoder.BeamOptions{Width: 1, MaxLen: 6})
			if err != nil {
				t.Fatal(err)
			}
			for r := 0; r < b.Real; r++ {
				one := oneRow(b, r)
				alone := m.Greedy(one, 6)[0]
				if !slices.Equal(greedy[r].Tokens, alone.Tokens) || !slices.Equal(beam[r][0].Tokens, alone.Tokens) {
					t.Fatalf("row %d: greedy in the batch %v, beam of width 1 %v, greedy alone %v", r, greedy[r].Tokens, beam[r][0].Tokens, alone.Tokens)
				}
				if want := fmt.Sprint(alone.Attention); fmt.Sprint(greedy[r].Attention) != want || fmt.Sprint(beam[r][0].Attention) != want {
					t.Fatalf("row %d: attention greedy in the batch\n%v\nbeam of width 1\n%v\ngreedy alone\n%v", r, greedy[r].Attention, beam[r][0].Attention, alone.Attention)
				}
			}
		})
	}
}

// oneRow is row r of b as a batch of its own, padded to its own source length.
func oneRow(b *data.Batch, r int) *data.Batch {
	n := b.SrcLengths[r]
	one := &data.Batch{Rows: 1, Real: 1, SrcLen: n, SrcLengths: []int{n}, Src: make([]int, n)}
	for t := 0; t < n; t++ {
		one.Src[t] = b.Src[t*b.Rows+r]
	}
	return one
}
