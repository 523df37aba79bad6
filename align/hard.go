package align

import (
	"fmt"

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
	_ Scorer[float32]   = (*HardAttention[float32])(nil)
	_ Attender[float32] = (*HardAttention[float32])(nil)
	_ Sampler           = (*HardAttention[float32])(nil)
)

// NewHardAttention registers the additive score's parameters ("attn.w_h", "attn.w_s", "attn.b_s", "attn.v") in set.
func NewHardAttention[T kernels.Float](set *param.Set[T], memDim, queryDim, dim int, temperature float64) *HardAttention[T] {
	return &HardAttention[T]{Additive: NewAdditive(set, memDim, queryDim, dim), Temperature: T(temperature)}
}

// Samples reports true: training feeds HardAttention Gumbel noise.
func (h *HardAttention[T]) Samples() bool { return true }

// WorkSize is the additive score's work, then the scores, the relaxed weights y and the score gradients
// (rows, srcLen each).
func (h *HardAttention[T]) WorkSize(rows, srcLen int) int {
	return h.Additive.WorkSize(rows, srcLen) + 3*rows*srcLen
}

func (h *HardAttention[T]) split(work []T, rows, srcLen int) (scoreWork, scores, y, dScores []T) {
	n, rs := h.Additive.WorkSize(rows, srcLen), rows*srcLen
	return work[:n], work[n : n+rs], work[n+rs : n+2*rs], work[n+2*rs : n+3*rs]
}

// Score writes the additive scores (rows, srcLen) before the choice; work holds WorkSize values.
func (h *HardAttention[T]) Score(query, keys []T, rows, srcLen int, scores, work []T) {
	if len(work) != h.WorkSize(rows, srcLen) {
		panic(fmt.Sprintf("align: HardAttention.Score got work %d for %d×%d", len(work), rows, srcLen))
	}
	scoreWork, _, _, _ := h.split(work, rows, srcLen)
	h.Additive.Score(query, keys, rows, srcLen, scores, scoreWork)
}

// ScoreBackward differentiates Score.
func (h *HardAttention[T]) ScoreBackward(query, keys, work, dScores []T, rows, srcLen int, dQuery, dKeys []T, grads [][]T) {
	scoreWork, _, _, _ := h.split(work, rows, srcLen)
	h.Additive.ScoreBackward(query, keys, scoreWork, dScores, rows, srcLen, dQuery, dKeys, grads)
}

// choose returns the chosen position of a row of length n > 0: the argmax of y.
func choose[T kernels.Float](y []T, n int) int {
	best := 0
	for i := 1; i < n; i++ {
		if y[i] > y[best] {
			best = i
		}
	}
	return best
}

// AttendStep writes one-hot weights and the chosen words' states as the context.
func (h *HardAttention[T]) AttendStep(query, keys, memory, noise []T, lengths []int, rows, srcLen int, weights, ctx, work []T) {
	md := h.MemDim
	if len(weights) != rows*srcLen || len(ctx) != rows*md || len(memory) != rows*srcLen*md || len(work) != h.WorkSize(rows, srcLen) ||
		(noise != nil && len(noise) != rows*srcLen) {
		panic(fmt.Sprintf("align: HardAttention.AttendStep got weights %d, ctx %d, memory %d, work %d, noise %d for %d×%d",
			len(weights), len(ctx), len(memory), len(work), len(noise), rows, srcLen))
	}
	scoreWork, scores, y, _ := h.split(work, rows, srcLen)
	h.Additive.Score(query, keys, rows, srcLen, scores, scoreWork)
	for r := 0; r < rows; r++ {
		n, yr, w, c := lengths[r], y[r*srcLen:(r+1)*srcLen], weights[r*srcLen:(r+1)*srcLen], ctx[r*md:(r+1)*md]
		if n <= 0 { // every position masked: uniform weights, as Attend gives
			for i := range w {
				w[i], yr[i] = T(1)/T(srcLen), T(1)/T(srcLen)
			}
			kernels.Gemm(false, false, 1, md, srcLen, 1, w, srcLen, memory[r*srcLen*md:(r+1)*srcLen*md], md, 0, c, md)
			continue
		}
		copy(yr, scores[r*srcLen:(r+1)*srcLen])
		if noise != nil {
			for i := 0; i < n; i++ {
				yr[i] = (yr[i] + noise[r*srcLen+i]) / h.Temperature
			}
			kernels.SoftmaxRow(yr, n)
		}
		k := choose(yr, n)
		if noise == nil { // no relaxation at inference: y is the choice itself
			clear(yr)
			yr[k] = 1
		}
		clear(w)
		w[k] = 1
		copy(c, memory[(r*srcLen+k)*md:(r*srcLen+k+1)*md])
	}
}

// AttendStepBackward passes the context's gradient to the chosen word's state, and to the scores through the
// relaxed weights y (straight-through): dy_i = dCtxᵀ h_i, de = y ⊙ (dy − yᵀdy) / τ.
func (h *HardAttention[T]) AttendStepBackward(query, keys, memory, work, dCtx []T, lengths []int, rows, srcLen int, dQuery, dKeys, dMemory []T, grads [][]T) {
	md := h.MemDim
	scoreWork, _, y, dScores := h.split(work, rows, srcLen)
	for r := 0; r < rows; r++ {
		n, yr, ds, g := lengths[r], y[r*srcLen:(r+1)*srcLen], dScores[r*srcLen:(r+1)*srcLen], dCtx[r*md:(r+1)*md]
		clear(ds)
		if n <= 0 { // uniform weights: every state gets its share, the scores nothing
			for i := 0; i < srcLen; i++ {
				dm := dMemory[(r*srcLen+i)*md : (r*srcLen+i+1)*md]
				for j, gj := range g {
					dm[j] += gj / T(srcLen)
				}
			}
			continue
		}
		// forward: context = h_k
		k := choose(yr, n)
		dm := dMemory[(r*srcLen+k)*md : (r*srcLen+k+1)*md]
		for j, gj := range g {
			dm[j] += gj
		}
		// straight-through: as if context = Σ_i y_i h_i, y = softmax((e + g)/τ)
		var dot T
		for i := 0; i < n; i++ {
			var dy T
			for j, gj := range g {
				dy += gj * memory[(r*srcLen+i)*md+j]
			}
			ds[i] = dy
			dot += yr[i] * dy
		}
		for i := 0; i < n; i++ {
			ds[i] = yr[i] * (ds[i] - dot) / h.Temperature
		}
	}
	h.Additive.ScoreBackward(query, keys, scoreWork, dScores, rows, srcLen, dQuery, dKeys, grads)
}

// graphHard is hard attention bound to one training graph.
type graphHard[T kernels.Float] struct {
	GraphScorer  // the additive score
	h            *HardAttention[T]
	rows, srcLen int
}

// Graph binds the additive score to p for batches of rows × srcLen.
func (h *HardAttention[T]) Graph(p *graph.Params[T], rows, srcLen int) GraphScorer {
	return &graphHard[T]{GraphScorer: h.Additive.Graph(p, rows, srcLen), h: h, rows: rows, srcLen: srcLen}
}

// Attend returns the one-hot weights (rows, srcLen) and the context (rows, MemDim): the choice is one op with the
// straight-through gradient (it reads the lengths at run time); the context is a gorgonia product.
func (g *graphHard[T]) Attend(query, keys, memory, noise *G.Node, lengths *[]int) (weights, ctx *G.Node) {
	rows, srcLen, tau := g.rows, g.srcLen, g.h.Temperature
	scores := g.Score(query, keys)
	inputs := []*G.Node{scores}
	if noise != nil {
		inputs = append(inputs, noise)
	}
	y := make([]T, rows*srcLen) // the relaxed weights of the last forward run
	dScores, dNoise := make([]T, rows*srcLen), make([]T, rows*srcLen)
	weights = graph.Fused(graph.FusedOp[T]{
		Name:  fmt.Sprintf("HardChoice(%d,%d,%v,%v)", rows, srcLen, tau, noise != nil),
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
				copy(yr, in[0][r*srcLen:(r+1)*srcLen])
				if noise != nil {
					for i := 0; i < n; i++ {
						yr[i] = (yr[i] + in[1][r*srcLen+i]) / tau
					}
					kernels.SoftmaxRow(yr, n)
				}
				k := choose(yr, n)
				if noise == nil {
					clear(yr)
					yr[k] = 1
				}
				w[k] = 1
			}
		},
		Backward: func(in [][]T, grad []T) [][]T {
			// straight-through: de = y ⊙ (dw − yᵀdw) / τ (0 where y is 0)
			for r := 0; r < rows; r++ {
				yr, dw, ds := y[r*srcLen:(r+1)*srcLen], grad[r*srcLen:(r+1)*srcLen], dScores[r*srcLen:(r+1)*srcLen]
				var dot T
				for i, yi := range yr {
					dot += yi * dw[i]
				}
				for i, yi := range yr {
					ds[i] = yi * (dw[i] - dot) / tau
				}
			}
			if noise == nil {
				return [][]T{dScores}
			}
			return [][]T{dScores, dNoise}
		},
	}, inputs...)
	w3 := G.Must(G.Reshape(weights, []int{rows, 1, srcLen}))
	md := memory.Shape()[2]
	return weights, G.Must(G.Reshape(G.Must(G.BatchedMatMul(w3, memory)), []int{rows, md}))
}
