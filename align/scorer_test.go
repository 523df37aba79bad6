package align

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/attend-nmt/attend/graph"
	"github.com/attend-nmt/attend/internal/gradcheck"
	"github.com/attend-nmt/attend/param"
	G "gorgonia.org/gorgonia"
)

// Tolerances of the score functions' tests.
const (
	gradTol     = 1e-6  // relative gap to float64 central differences
	autodiffTol = 1e-10 // hand-written against gorgonia's gradient of the same expression, float64
)

// scorerCase is one score function at the odd sizes every test uses: B=3 rows, S=5 positions, memory width 8
// (two encoder halves of 4), query width 7.
type scorerCase struct {
	name string
	cfg  Config
}

const rows, srcLen = 3, 5

// testLengths are the source lengths of the test rows: one full, two padded.
func testLengths() []int { return []int{5, 2, 4} }

// testNoise is fixed Gumbel noise (rows, srcLen) for a scorer that samples in training, nil for the others.
func testNoise(s any) []float64 {
	if sampler, ok := s.(Sampler); !ok || !sampler.Samples() {
		return nil
	}
	rng := rand.New(rand.NewPCG(7, 7))
	noise := make([]float64, rows*srcLen)
	for i := range noise {
		noise[i] = -math.Log(-math.Log(rng.Float64()))
	}
	return noise
}

func scorerCases() []scorerCase {
	return []scorerCase{
		{"additive", Config{MemDim: 8, QueryDim: 7, Dim: 6}},
		{"mlp", Config{MemDim: 8, QueryDim: 7, Dim: 6}},
		{"dot", Config{MemDim: 8, QueryDim: 7}}, // the query is projected
		{"dot", Config{MemDim: 8, QueryDim: 8}}, // the query is used as it is
		{"scaled-dot", Config{MemDim: 8, QueryDim: 7}},
		{"scaled-dot", Config{MemDim: 8, QueryDim: 8}},
		{"general", Config{MemDim: 8, QueryDim: 7}},
		{"cosine", Config{MemDim: 8, QueryDim: 7}},
		{"cosine", Config{MemDim: 8, QueryDim: 8}},
		{"concat", Config{MemDim: 8, QueryDim: 7}},
		{"local", Config{MemDim: 8, QueryDim: 7, Dim: 6, Window: 1}},
		{"local", Config{MemDim: 8, QueryDim: 7, Dim: 6, Window: 3}},
		{"multi-head", Config{MemDim: 8, QueryDim: 7, Dim: 6, Heads: 2}},
		{"multi-head", Config{MemDim: 8, QueryDim: 7, Dim: 6, Heads: 1}},
		{"hard", Config{MemDim: 8, QueryDim: 7, Dim: 6, Temperature: 0.7}},
	}
}

func newScorer(t *testing.T, c scorerCase, rng *rand.Rand) (Attention[float64], *param.Set[float64]) {
	set := param.NewSet[float64]()
	s, err := New[float64](c.name, set, c.cfg)
	if err != nil {
		t.Fatal(err)
	}
	set.Pack()
	s.Init(rng)
	return s, set
}

// stepCase is one attention step of the test sizes over a query, a memory and a state (nil without one), with
// the buffers it writes.
type stepCase struct {
	s             Attention[float64]
	query, memory []float64
	state         []float64
	keys          []float64
	step          Step[float64]
	memDim        int
	lengths       []int
}

func newStepCase(s Attention[float64], c scorerCase, rng *rand.Rand) *stepCase {
	sc := &stepCase{s: s, memDim: c.cfg.MemDim, lengths: testLengths(),
		query: gradcheck.Random(rng, rows*c.cfg.QueryDim, 1), memory: gradcheck.Random(rng, rows*srcLen*c.cfg.MemDim, 1)}
	if w := s.StateWidth(); w > 0 {
		sc.state = gradcheck.Random(rng, rows*srcLen*w, 1)
	}
	return sc
}

// run computes the keys and the step, as the decoder does (with fixed Gumbel noise for an attention that
// samples), and returns the step.
func (c *stepCase) run() Step[float64] {
	s := c.s
	c.keys = make([]float64, rows*srcLen*s.KeyWidth())
	s.Keys(c.memory, c.lengths, rows, srcLen, c.keys)
	st := Step[float64]{Rows: rows, SrcLen: srcLen, Query: c.query, Keys: c.keys, Memory: c.memory, Lengths: c.lengths,
		Noise: testNoise(s), State: c.state, Weights: make([]float64, rows*srcLen), Context: make([]float64, rows*c.memDim),
		Work: make([]float64, s.WorkSize(rows, srcLen))}
	if c.state != nil {
		st.Next = make([]float64, len(c.state))
	}
	s.Step(st)
	c.step = st
	return st
}

// backward differentiates Σ rCtx ⊙ context + Σ rNext ⊙ next through the last run, into fresh gradients.
func (c *stepCase) backward(rCtx, rNext []float64) (g StepGrad[float64]) {
	g = StepGrad[float64]{Context: rCtx, Next: rNext, Query: make([]float64, len(c.query)), Keys: make([]float64, len(c.keys)),
		Memory: make([]float64, len(c.memory))}
	if c.state != nil {
		g.State = make([]float64, len(c.state))
	}
	for _, p := range c.s.Params() {
		g.Params = append(g.Params, make([]float64, len(p.Data)))
	}
	c.s.StepBackward(c.step, g)
	c.s.KeysBackward(c.memory, g.Keys, rows, srcLen, g.Memory, g.Params)
	return g
}

func TestScorerWeightsSumToOneOverRealWordsAndAreZeroOnPadding(t *testing.T) {
	for _, c := range scorerCases() {
		t.Run(fmt.Sprintf("%s %d→%d window %d", c.name, c.cfg.MemDim, c.cfg.QueryDim, c.cfg.Window), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, 1))
			lengths := testLengths()
			s, _ := newScorer(t, c, rng)
			weights := newStepCase(s, c, rng).run().Weights
			for r := 0; r < rows; r++ {
				var sum float64
				for i := 0; i < srcLen; i++ {
					w := weights[r*srcLen+i]
					if i >= lengths[r] && w != 0 {
						t.Fatalf("row %d padding position %d has weight %g, want exactly 0", r, i, w)
					}
					sum += w
				}
				if math.Abs(sum-1) > 1e-12 {
					t.Fatalf("row %d weights sum to %.15f", r, sum)
				}
			}
		})
	}
}

// TestScorerStepBackwardMatchesFiniteDifferences differentiates loss = Σ R₁ ⊙ context (+ Σ R₂ ⊙ next state)
// through Keys and Step by hand (StepBackward, KeysBackward) and by central differences.
func TestScorerStepBackwardMatchesFiniteDifferences(t *testing.T) {
	for _, c := range scorerCases() {
		t.Run(fmt.Sprintf("%s %d→%d window %d", c.name, c.cfg.MemDim, c.cfg.QueryDim, c.cfg.Window), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(2, 2))
			s, _ := newScorer(t, c, rng)
			sc := newStepCase(s, c, rng)
			md := c.cfg.MemDim
			rCtx, rNext := gradcheck.Random(rng, rows*md, 1), gradcheck.Random(rng, len(sc.state), 1)
			loss := func() float64 {
				st := sc.run()
				return gradcheck.Dot(st.Context, rCtx) + gradcheck.Dot(st.Next, rNext)
			}
			noise := testNoise(s)
			if noise != nil {
				// A sampling attention's straight-through gradient is the gradient of its relaxation: the context
				// Σ_i y_i h_i with y = softmax((e + g)/τ), for the query and the score's parameters.
				hard := s.(*HardAttention[float64])
				loss = func() float64 {
					keys := make([]float64, rows*srcLen*s.KeyWidth())
					s.Keys(sc.memory, sc.lengths, rows, srcLen, keys)
					scores := make([]float64, rows*srcLen)
					hard.Additive.Score(sc.query, keys, nil, rows, srcLen, scores, make([]float64, hard.Additive.WorkSize(rows, srcLen)))
					for i := range scores {
						scores[i] = (scores[i] + noise[i]) / c.cfg.Temperature
					}
					weights, ctx := make([]float64, rows*srcLen), make([]float64, rows*md)
					Attend(scores, sc.lengths, sc.memory, rows, srcLen, md, weights, ctx)
					return gradcheck.Dot(ctx, rCtx)
				}
			}
			sc.run()
			g := sc.backward(rCtx, rNext)
			tensors := []gradcheck.Tensor{{Name: "query", X: sc.query, Grad: g.Query}}
			if noise == nil { // (the relaxation reads the memory directly, the hard choice does not)
				tensors = append(tensors, gradcheck.Tensor{Name: "memory", X: sc.memory, Grad: g.Memory})
			}
			if sc.state != nil {
				tensors = append(tensors, gradcheck.Tensor{Name: "state", X: sc.state, Grad: g.State})
			}
			for i, p := range s.Params() {
				tensors = append(tensors, gradcheck.Tensor{Name: p.Name, X: p.Data, Grad: g.Params[i]})
			}
			gradcheck.Check(t, loss, tensors, 40, rng, gradTol)
		})
	}
}

// TestScorerGraphMatchesPlainGo builds the attention's gorgonia expression (the unfused training path) and
// checks its weights, context and next state, and gorgonia's gradients of Σ R₁ ⊙ context (+ Σ R₂ ⊙ next state),
// against Step, StepBackward and KeysBackward.
func TestScorerGraphMatchesPlainGo(t *testing.T) {
	for _, c := range scorerCases() {
		t.Run(fmt.Sprintf("%s %d→%d window %d", c.name, c.cfg.MemDim, c.cfg.QueryDim, c.cfg.Window), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(3, 3))
			s, set := newScorer(t, c, rng)
			sc := newStepCase(s, c, rng)
			md, qd := c.cfg.MemDim, c.cfg.QueryDim
			st := sc.run()
			rCtx, rNext := gradcheck.Random(rng, rows*md, 1), gradcheck.Random(rng, len(sc.state), 1)

			// build adds the step to a fresh graph; gorgonia may overwrite a node's value in place once later nodes
			// have read it, so each output is read from a graph that ends with it, the gradients from another.
			build := func() (p *graph.Params[float64], weights, ctx, next *G.Node) {
				p = graph.NewParams[float64](nil)
				gs := s.Graph(p, rows, srcLen)
				m := p.Input("memory", sc.memory, rows, srcLen, md)
				q, k := p.Input("query", sc.query, rows, qd), gs.Keys(m, &sc.lengths)
				var noise, state *G.Node
				if n := testNoise(s); n != nil {
					noise = p.Input("noise", n, rows, srcLen)
				}
				if sc.state != nil {
					state = p.Input("state", sc.state, rows, len(sc.state)/rows)
				}
				weights, ctx, next = gs.Step(q, k, m, noise, state, &sc.lengths)
				return p, weights, ctx, next
			}
			run := func(p *graph.Params[float64]) {
				vm := G.NewTapeMachine(p.Graph)
				defer vm.Close()
				if err := vm.RunAll(); err != nil {
					t.Fatal(err)
				}
			}
			for i, want := range [][]float64{st.Weights, st.Context, st.Next} {
				p, weights, ctx, next := build()
				got := []*G.Node{weights, ctx, next}[i]
				if want == nil {
					if got != nil {
						t.Fatalf("graph output %d without a state", i)
					}
					continue
				}
				run(p)
				gradcheck.Close(t, fmt.Sprintf("graph output %d", i), got.Value().Data().([]float64), want, autodiffTol)
			}
			if len(s.Params()) == 0 { // (a graph without parameters has nothing to differentiate)
				return
			}
			p, _, ctx, next := build()
			loss := G.Must(G.Sum(G.Must(G.HadamardProd(ctx, p.Input("r", rCtx, rows, md)))))
			if next != nil {
				loss = G.Must(G.Add(loss, G.Must(G.Sum(G.Must(G.HadamardProd(next, p.Input("rNext", rNext, rows, len(rNext)/rows)))))))
			}
			if err := p.Differentiate(loss); err != nil {
				t.Fatal(err)
			}
			run(p)
			auto := set.ZerosLike()
			graph.SumGrads(auto, 1, []*graph.Params[float64]{p}, 1<<15, nil)
			g := sc.backward(rCtx, rNext)
			for i, t2 := range s.Params() {
				gradcheck.Close(t, t2.Name, g.Params[i], auto.Get(t2.Name).Data, autodiffTol)
			}
		})
	}
}
