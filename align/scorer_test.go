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

func newScorer(t *testing.T, c scorerCase, rng *rand.Rand) (Scorer[float64], *param.Set[float64]) {
	set := param.NewSet[float64]()
	s, err := New[float64](c.name, set, c.cfg)
	if err != nil {
		t.Fatal(err)
	}
	set.Pack()
	s.Init(rng)
	return s, set
}

// step runs keys → scores → masked softmax → context, as the decoder does at one step (an Attender's own step
// for an Attender, whose scores are nil).
func step(s Scorer[float64], query, memory []float64, memDim int) (scores, weights, ctx, keys, work []float64) {
	lengths := testLengths()
	keys = make([]float64, rows*srcLen*s.KeyWidth())
	s.Keys(memory, lengths, rows, srcLen, keys)
	work = make([]float64, s.WorkSize(rows, srcLen))
	weights, ctx = make([]float64, rows*srcLen), make([]float64, rows*memDim)
	if at, ok := s.(Attender[float64]); ok {
		at.AttendStep(query, keys, memory, testNoise(s), lengths, rows, srcLen, weights, ctx, work)
		return nil, weights, ctx, keys, work
	}
	scores = make([]float64, rows*srcLen)
	s.Score(query, keys, rows, srcLen, scores, work)
	Attend(scores, lengths, memory, rows, srcLen, memDim, weights, ctx)
	return scores, weights, ctx, keys, work
}

func TestScorerWeightsSumToOneOverRealWordsAndAreZeroOnPadding(t *testing.T) {
	for _, c := range scorerCases() {
		t.Run(fmt.Sprintf("%s %d→%d window %d", c.name, c.cfg.MemDim, c.cfg.QueryDim, c.cfg.Window), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, 1))
			lengths := testLengths()
			s, _ := newScorer(t, c, rng)
			_, weights, _, _, _ := step(s, gradcheck.Random(rng, rows*c.cfg.QueryDim, 1), gradcheck.Random(rng, rows*srcLen*c.cfg.MemDim, 1), c.cfg.MemDim)
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

// TestScorerStepBackwardMatchesFiniteDifferences differentiates loss = Σ R₁ ⊙ context + Σ R₂ ⊙ weights through
// Keys, Score and Attend by hand (AttendBackward, ScoreBackward, KeysBackward) and by central differences. For an
// Attender the loss is Σ R₁ ⊙ context (its exported weights are not differentiated).
func TestScorerStepBackwardMatchesFiniteDifferences(t *testing.T) {
	for _, c := range scorerCases() {
		t.Run(fmt.Sprintf("%s %d→%d window %d", c.name, c.cfg.MemDim, c.cfg.QueryDim, c.cfg.Window), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(2, 2))
			lengths := testLengths()
			s, _ := newScorer(t, c, rng)
			md := c.cfg.MemDim
			query, memory := gradcheck.Random(rng, rows*c.cfg.QueryDim, 1), gradcheck.Random(rng, rows*srcLen*md, 1)
			rCtx, rWeights := gradcheck.Random(rng, rows*md, 1), gradcheck.Random(rng, rows*srcLen, 1)
			at, attender := s.(Attender[float64])
			if attender {
				clear(rWeights)
			}
			loss := func() float64 {
				_, weights, ctx, _, _ := step(s, query, memory, md)
				return gradcheck.Dot(ctx, rCtx) + gradcheck.Dot(weights, rWeights)
			}
			noise := testNoise(s)
			if noise != nil {
				// A sampling attention's straight-through gradient is the gradient of its relaxation: the context
				// Σ_i y_i h_i with y = softmax((e + g)/τ), for the query and the score's parameters.
				tau := c.cfg.Temperature
				loss = func() float64 {
					keys := make([]float64, rows*srcLen*s.KeyWidth())
					s.Keys(memory, lengths, rows, srcLen, keys)
					scores := make([]float64, rows*srcLen)
					s.Score(query, keys, rows, srcLen, scores, make([]float64, s.WorkSize(rows, srcLen)))
					for i := range scores {
						scores[i] = (scores[i] + noise[i]) / tau
					}
					weights, ctx := make([]float64, rows*srcLen), make([]float64, rows*md)
					Attend(scores, lengths, memory, rows, srcLen, md, weights, ctx)
					return gradcheck.Dot(ctx, rCtx)
				}
			}
			_, weights, _, keys, work := step(s, query, memory, md)
			dQuery, dKeys := make([]float64, len(query)), make([]float64, len(keys))
			grads := make([][]float64, len(s.Params()))
			for i, p := range s.Params() {
				grads[i] = make([]float64, len(p.Data))
			}
			// The weights' own gradient joins the one that flows back from the context.
			dScores, dMemory := make([]float64, rows*srcLen), make([]float64, len(memory))
			if attender {
				at.AttendStepBackward(query, keys, memory, work, rCtx, lengths, rows, srcLen, dQuery, dKeys, dMemory, grads)
			} else {
				AttendBackward(weights, lengths, memory, rCtx, rows, srcLen, md, dScores, dMemory)
			}
			for r := 0; r < rows; r++ {
				var dot float64
				for i := 0; i < srcLen; i++ {
					dot += weights[r*srcLen+i] * rWeights[r*srcLen+i]
				}
				for i := 0; i < srcLen; i++ {
					dScores[r*srcLen+i] += weights[r*srcLen+i] * (rWeights[r*srcLen+i] - dot)
				}
			}
			if !attender {
				s.ScoreBackward(query, keys, work, dScores, rows, srcLen, dQuery, dKeys, grads)
			}
			s.KeysBackward(memory, dKeys, rows, srcLen, dMemory, grads)
			tensors := []gradcheck.Tensor{{Name: "query", X: query, Grad: dQuery}}
			if noise == nil { // (the relaxation reads the memory directly, the hard choice does not)
				tensors = append(tensors, gradcheck.Tensor{Name: "memory", X: memory, Grad: dMemory})
			}
			for i, p := range s.Params() {
				tensors = append(tensors, gradcheck.Tensor{Name: p.Name, X: p.Data, Grad: grads[i]})
			}
			gradcheck.Check(t, loss, tensors, 40, rng, gradTol)
		})
	}
}

// TestScorerGraphMatchesPlainGo builds the score's gorgonia expression (the unfused training path) and checks its
// scores and gorgonia's gradients of Σ R ⊙ scores against Score, ScoreBackward and KeysBackward. For an Attender
// it checks the weights and context, and the gradients of Σ R ⊙ context against AttendStepBackward.
func TestScorerGraphMatchesPlainGo(t *testing.T) {
	for _, c := range scorerCases() {
		t.Run(fmt.Sprintf("%s %d→%d window %d", c.name, c.cfg.MemDim, c.cfg.QueryDim, c.cfg.Window), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(3, 3))
			lengths := testLengths()
			s, set := newScorer(t, c, rng)
			md, qd := c.cfg.MemDim, c.cfg.QueryDim
			query, memory := gradcheck.Random(rng, rows*qd, 1), gradcheck.Random(rng, rows*srcLen*md, 1)
			scores, weights, ctx, keys, work := step(s, query, memory, md)
			at, attender := s.(Attender[float64])
			// out is what the graph is compared on: the scores, or an Attender's context.
			out, outShape := scores, []int{rows, srcLen}
			if attender {
				out, outShape = ctx, []int{rows, md}
			}
			r := gradcheck.Random(rng, len(out), 1)

			// build adds the score to a fresh graph; gorgonia may overwrite a node's value in place once later nodes
			// have read it, so the outputs are read from a graph that ends with them, the gradients from another.
			build := func() (p *graph.Params[float64], out, weights *G.Node) {
				p = graph.NewParams[float64](nil)
				gs := s.Graph(p, rows, srcLen)
				m := p.Input("memory", memory, rows, srcLen, md)
				q, k := p.Input("query", query, rows, qd), gs.Keys(m, &lengths)
				if attender {
					var noise *G.Node
					if n := testNoise(s); n != nil {
						noise = p.Input("noise", n, rows, srcLen)
					}
					weights, out = gs.(GraphAttender).Attend(q, k, m, noise, &lengths)
					return p, out, weights
				}
				return p, gs.Score(q, k), nil
			}
			run := func(p *graph.Params[float64]) {
				vm := G.NewTapeMachine(p.Graph)
				defer vm.Close()
				if err := vm.RunAll(); err != nil {
					t.Fatal(err)
				}
			}
			p, gOut, _ := build()
			run(p)
			gradcheck.Close(t, "graph output", gOut.Value().Data().([]float64), out, autodiffTol)
			if attender {
				p, _, gWeights := build()
				run(p)
				gradcheck.Close(t, "graph weights", gWeights.Value().Data().([]float64), weights, autodiffTol)
			}
			if len(s.Params()) == 0 { // (a graph without parameters has nothing to differentiate)
				return
			}
			p, gOut, _ = build()
			loss := G.Must(G.Sum(G.Must(G.HadamardProd(gOut, p.Input("r", r, outShape...)))))
			if err := p.Differentiate(loss); err != nil {
				t.Fatal(err)
			}
			run(p)
			auto := set.ZerosLike()
			p.AddGrads(auto, 1)

			dQuery, dKeys, dMemory := make([]float64, len(query)), make([]float64, len(keys)), make([]float64, len(memory))
			grads := make([][]float64, len(s.Params()))
			for i, t := range s.Params() {
				grads[i] = make([]float64, len(t.Data))
			}
			if attender {
				at.AttendStepBackward(query, keys, memory, work, r, lengths, rows, srcLen, dQuery, dKeys, dMemory, grads)
			} else {
				s.ScoreBackward(query, keys, work, r, rows, srcLen, dQuery, dKeys, grads)
			}
			s.KeysBackward(memory, dKeys, rows, srcLen, dMemory, grads)
			for i, t2 := range s.Params() {
				gradcheck.Close(t, t2.Name, grads[i], auto.Get(t2.Name).Data, autodiffTol)
			}
		})
	}
}
