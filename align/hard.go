package align

import (
	"fmt"
	"math"

	"github.com/attend-nmt/attend/graph"
	"github.com/attend-nmt/attend/kernels"
	"github.com/attend-nmt/attend/param"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// HardAttention is hard attention, model.attention "hard" (align.Hard, by contrast, turns soft weights into
// alignment links): the additive score picks one source word, whose state is the context. In training the
// word is sampled by Gumbel-softmax with straight-through gradients:
//
//	y = masked softmax((e + g) / τ),  g standard Gumbel noise;  k = argmax_i y_i
//	forward: weights = onehot(k), context = h_k;  backward: as if the weights were y
//
// At inference (no noise) k = argmax_i e_i. τ is model.temperature. The weights are exactly one-hot, so the
// heatmap shows one word per output word.
type HardAttention[T kernels.Float] struct {
	*Additive[T]
	Temperature T
}

var (
	_ Attention[float32] = (*HardAttention[float32])(nil)
	_ Sampler            = (*HardAttention[float32])(nil)
)

// newHardAttention is the registry's constructor: it needs Dim ≥ 1 and a finite temperature above 0.
func newHardAttention[T kernels.Float](set *param.Set[T], cfg Config) (Attention[T], error) {
	if cfg.Dim < 1 || !(cfg.Temperature > 0 && cfg.Temperature < math.Inf(1)) {
		return nil, fmt.Errorf("align: hard attention needs a hidden width (model.attn_dim) of at least 1 and a finite temperature (model.temperature) above 0, got %d and %g", cfg.Dim, cfg.Temperature)
	}
	return NewHardAttention(set, cfg.MemDim, cfg.QueryDim, cfg.Dim, cfg.Temperature), nil
}

// NewHardAttention registers the additive score's parameters ("attn.w_h", "attn.w_s", "attn.b_s", "attn.v") in set.
func NewHardAttention[T kernels.Float](set *param.Set[T], memDim, queryDim, dim int, temperature float64) *HardAttention[T] {
	return &HardAttention[T]{Additive: NewAdditive(set, memDim, queryDim, dim), Temperature: T(temperature)}
}

// Samples reports true: training feeds HardAttention Gumbel noise.
func (h *HardAttention[T]) Samples() bool { return true }

// StateWidth is 0: the choice depends on the step alone.
func (h *HardAttention[T]) StateWidth() int { return 0 }

// WorkSize is the additive score's work, then the scores, the relaxed weights y and the score gradients
// (rows, srcLen each).
func (h *HardAttention[T]) WorkSize(rows, srcLen int) int {
	return h.Additive.WorkSize(rows, srcLen) + 3*rows*srcLen
}

func (h *HardAttention[T]) split(work []T, rows, srcLen int) (scoreWork, scores, y, dScores []T) {
	n, rs := h.Additive.WorkSize(rows, srcLen), rows*srcLen
	return work[:n], work[n : n+rs], work[n+rs : n+2*rs], work[n+2*rs : n+3*rs]
}

// pick writes into y (a row of srcLen) the relaxed weights of a row of n > 0 words with the given scores —
// softmax((e + g)/τ) over its words with noise g, the one-hot choice itself without noise — and returns the
// chosen position, the argmax of y (the first, on a tie).
func (h *HardAttention[T]) pick(y, scores, noise []T, n int) int {
	copy(y, scores)
	if noise != nil {
		for i := 0; i < n; i++ {
			y[i] = (y[i] + noise[i]) / h.Temperature
		}
		kernels.SoftmaxRow(y, n)
	}
	k := kernels.Argmax(y[:n])
	if noise == nil { // no relaxation at inference: y is the choice itself
		clear(y)
		y[k] = 1
	}
	return k
}

// straightThrough writes the scores' gradient ds of a row with relaxed weights y, given the gradient dw of the
// weights: as if the weights were y = softmax((e + g)/τ), ds = y ⊙ (dw − yᵀdw) / τ (0 where y is 0).
func (h *HardAttention[T]) straightThrough(y, dw, ds []T) {
	kernels.SoftmaxRowBackward(y, dw, ds)
	for i := range ds {
		ds[i] /= h.Temperature
	}
}

// Step writes one-hot weights and the chosen words' states as the context.
func (h *HardAttention[T]) Step(s Step[T]) {
	rows, srcLen, md := s.Rows, s.SrcLen, h.MemDim
	if len(s.Weights) != rows*srcLen || len(s.Context) != rows*md || len(s.Memory) != rows*srcLen*md || len(s.Work) != h.WorkSize(rows, srcLen) ||
		(s.Noise != nil && len(s.Noise) != rows*srcLen) {
		panic(fmt.Sprintf("align: HardAttention.Step got weights %d, ctx %d, memory %d, work %d, noise %d for %d×%d",
			len(s.Weights), len(s.Context), len(s.Memory), len(s.Work), len(s.Noise), rows, srcLen))
	}
	scoreWork, scores, y, _ := h.split(s.Work, rows, srcLen)
	h.Additive.Score(s.Query, s.Keys, nil, rows, srcLen, scores, scoreWork)
	for r := 0; r < rows; r++ {
		n, yr, w, c := s.Lengths[r], y[r*srcLen:(r+1)*srcLen], s.Weights[r*srcLen:(r+1)*srcLen], s.Context[r*md:(r+1)*md]
		if n <= 0 { // every position masked: uniform weights, as Attend gives
			for i := range w {
				w[i], yr[i] = T(1)/T(srcLen), T(1)/T(srcLen)
			}
			kernels.Gemm(false, false, 1, md, srcLen, 1, w, srcLen, s.Memory[r*srcLen*md:(r+1)*srcLen*md], md, 0, c, md)
			continue
		}
		var noise []T
		if s.Noise != nil {
			noise = s.Noise[r*srcLen : (r+1)*srcLen]
		}
		k := h.pick(yr, scores[r*srcLen:(r+1)*srcLen], noise, n)
		clear(w)
		w[k] = 1
		copy(c, s.Memory[(r*srcLen+k)*md:(r*srcLen+k+1)*md])
	}
}

// StepBackward passes the context's gradient to the chosen word's state, and to the scores through the
// relaxed weights y (straight-through): dy_i = dCtxᵀ h_i, then straightThrough.
func (h *HardAttention[T]) StepBackward(s Step[T], g StepGrad[T]) {
	rows, srcLen, md := s.Rows, s.SrcLen, h.MemDim
	scoreWork, _, y, dScores := h.split(s.Work, rows, srcLen)
	for r := 0; r < rows; r++ {
		n, yr, ds, dc := s.Lengths[r], y[r*srcLen:(r+1)*srcLen], dScores[r*srcLen:(r+1)*srcLen], g.Context[r*md:(r+1)*md]
		clear(ds)
		if n <= 0 { // uniform weights: every state gets its share, the scores nothing
			for i := 0; i < srcLen; i++ {
				dm := g.Memory[(r*srcLen+i)*md : (r*srcLen+i+1)*md]
				for j, gj := range dc {
					dm[j] += gj / T(srcLen)
				}
			}
			continue
		}
		// forward: context = h_k
		k := kernels.Argmax(yr[:n])
		dm := g.Memory[(r*srcLen+k)*md : (r*srcLen+k+1)*md]
		for j, gj := range dc {
			dm[j] += gj
		}
		// straight-through: as if context = Σ_i y_i h_i
		for i := 0; i < n; i++ {
			var dy T
			for j, gj := range dc {
				dy += gj * s.Memory[(r*srcLen+i)*md+j]
			}
			ds[i] = dy
		}
		h.straightThrough(yr[:n], ds[:n], ds[:n])
	}
	h.Additive.ScoreBackward(s.Query, s.Keys, nil, scoreWork, dScores, rows, srcLen, g.Query, g.Keys, nil, g.Params)
}

// graphHard is hard attention bound to one training graph.
type graphHard[T kernels.Float] struct {
	GraphScorer  // the additive score
	h            *HardAttention[T]
	rows, srcLen int
}

// Graph binds the additive score to p for batches of rows × srcLen.
func (h *HardAttention[T]) Graph(p *graph.Params[T], rows, srcLen int) GraphAttention {
	return &graphHard[T]{GraphScorer: h.Additive.Graph(p, rows, srcLen), h: h, rows: rows, srcLen: srcLen}
}

// Step returns the one-hot weights (rows, srcLen) and the context (rows, MemDim): the choice is one op with the
// straight-through gradient (it reads the lengths at run time); the context is a gorgonia product.
func (g *graphHard[T]) Step(query, keys, memory, noise, _ *G.Node, lengths *[]int) (weights, ctx, next *G.Node) {
	rows, srcLen := g.rows, g.srcLen
	inputs := []*G.Node{g.Score(query, keys, nil)}
	if noise != nil {
		inputs = append(inputs, noise)
	}
	y := make([]T, rows*srcLen) // the relaxed weights of the last forward run
	dScores, dNoise := make([]T, rows*srcLen), make([]T, rows*srcLen)
	weights = graph.Fused(graph.FusedOp[T]{
		Name:  fmt.Sprintf("HardChoice(%d,%d,%v,%v)", rows, srcLen, g.h.Temperature, noise != nil),
		Shape: tensor.Shape{rows, srcLen},
		Forward: func(in [][]T, out []T) {
			clear(out)
			for r := 0; r < rows; r++ {
				n, yr, w := (*lengths)[r], y[r*srcLen:(r+1)*srcLen], out[r*srcLen:(r+1)*srcLen]
				if n <= 0 {
					for i := range w {
						w[i], yr[i] = T(1)/T(srcLen), 0
					}
					continue
				}
				var rowNoise []T
				if noise != nil {
					rowNoise = in[1][r*srcLen : (r+1)*srcLen]
				}
				w[g.h.pick(yr, in[0][r*srcLen:(r+1)*srcLen], rowNoise, n)] = 1
			}
		},
		Backward: func(in [][]T, grad []T) [][]T {
			for r := 0; r < rows; r++ {
				g.h.straightThrough(y[r*srcLen:(r+1)*srcLen], grad[r*srcLen:(r+1)*srcLen], dScores[r*srcLen:(r+1)*srcLen])
			}
			if noise == nil {
				return [][]T{dScores}
			}
			return [][]T{dScores, dNoise}
		},
	}, inputs...)
	w3 := G.Must(G.Reshape(weights, []int{rows, 1, srcLen}))
	md := memory.Shape()[2]
	return weights, G.Must(G.Reshape(G.Must(G.BatchedMatMul(w3, memory)), []int{rows, md})), nil
}
