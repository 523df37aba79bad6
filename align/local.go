package align

import (
	"fmt"
	"math/rand/v2"

	"github.com/attend-nmt/attend/graph"
	"github.com/attend-nmt/attend/kernels"
	"github.com/attend-nmt/attend/param"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Local is Luong's local-p attention, model.attention "local": the decoder predicts a centre
//
//	p_t = (L − 1) · sigmoid(v_pᵀ tanh(W_p s_{t-1}))
//
// in a row of L source words, and only the words within Window of it are scored, by the general score plus the
// log of a Gaussian of standard deviation Window/2 around p_t:
//
//	e_ti = s_{t-1}ᵀ W h_i − 2 (i − p_t)² / Window²   for |i − p_t| ≤ Window, masked otherwise.
//
// After the softmax the weights are Luong's align(s, h_i) · exp(−(i − p_t)²/(2σ²)), renormalised over the window
// (Luong leaves them unnormalised). The key of a position is W h_i followed by the row's length L.
type Local[T kernels.Float] struct {
	MemDim, QueryDim, Dim int
	Window                int
	W                     *param.Tensor[T] // (MemDim, QueryDim): the general score
	PosW                  *param.Tensor[T] // W_p (QueryDim, Dim)
	PosV                  *param.Tensor[T] // v_p (Dim)
}

var _ Scorer[float32] = (*Local[float32])(nil)

// newLocal is the registry's constructor: NewLocal's soft attention, which needs a window and Dim of at least 1.
func newLocal[T kernels.Float](set *param.Set[T], cfg Config) (Attention[T], error) {
	if cfg.Dim < 1 || cfg.Window < 1 {
		return nil, fmt.Errorf("align: local attention needs a window (model.window) and a hidden width (model.attn_dim) of at least 1, got %d and %d", cfg.Window, cfg.Dim)
	}
	return NewSoft[T](NewLocal(set, cfg.MemDim, cfg.QueryDim, cfg.Dim, cfg.Window)), nil
}

// NewLocal registers "attn.w", "attn.w_p" and "attn.v_p" in set.
func NewLocal[T kernels.Float](set *param.Set[T], memDim, queryDim, dim, window int) *Local[T] {
	return &Local[T]{MemDim: memDim, QueryDim: queryDim, Dim: dim, Window: window,
		W: set.Add("attn.w", memDim, queryDim), PosW: set.Add("attn.w_p", queryDim, dim), PosV: set.Add("attn.v_p", dim)}
}

// Params returns W, W_p and v_p.
func (l *Local[T]) Params() []*param.Tensor[T] { return []*param.Tensor[T]{l.W, l.PosW, l.PosV} }

// Init draws every weight uniformly in ±1/sqrt(fan-in).
func (l *Local[T]) Init(rng *rand.Rand) {
	param.Uniform(l.W, param.InvSqrt(l.MemDim), rng)
	param.Uniform(l.PosW, param.InvSqrt(l.QueryDim), rng)
	param.Uniform(l.PosV, param.InvSqrt(l.Dim), rng)
}

// KeyWidth is QueryDim + 1: W h_i, then the row's length.
func (l *Local[T]) KeyWidth() int { return l.QueryDim + 1 }

// Keys writes [W h_i ; L] for every position.
func (l *Local[T]) Keys(memory []T, lengths []int, rows, srcLen int, keys []T) {
	kw := l.KeyWidth()
	if len(lengths) < rows {
		panic(fmt.Sprintf("align: Local.Keys got %d lengths for %d rows", len(lengths), rows))
	}
	projectKeys("Local", l.W.Data, memory, rows, srcLen, l.MemDim, l.QueryDim, kw, keys)
	for r := 0; r < rows; r++ {
		for i := 0; i < srcLen; i++ {
			keys[(r*srcLen+i)*kw+l.QueryDim] = T(lengths[r])
		}
	}
}

// KeysBackward adds dW = memoryᵀ dKeys and dMemory = dKeys Wᵀ (the length slot has no gradient).
func (l *Local[T]) KeysBackward(memory, dKeys []T, rows, srcLen int, dMemory []T, grads [][]T) {
	kernels.LinearBackward(memory, l.W.Data, dKeys, rows*srcLen, l.MemDim, l.QueryDim, l.KeyWidth(), dMemory, grads[0])
}

// WorkSize: tanh(W_p s) and its gradient (rows, Dim each) and sigmoid(v_pᵀ tanh(W_p s)) (rows).
func (l *Local[T]) WorkSize(rows, srcLen int) int { return 2*rows*l.Dim + rows }

// gaussian returns the log-Gaussian term −2d²/D² of distance d and its derivative with respect to the centre,
// 4d/D², when |d| ≤ D; ok is false outside the window.
func (l *Local[T]) gaussian(d T) (logG, dCentre T, ok bool) {
	w := T(l.Window)
	if d > w || d < -w {
		return 0, 0, false
	}
	return -2 * d * d / (w * w), 4 * d / (w * w), true
}

// Score writes e (rows, srcLen).
func (l *Local[T]) Score(query, keys, _ []T, rows, srcLen int, scores, work []T) {
	q, kw, a := l.QueryDim, l.KeyWidth(), l.Dim
	if len(query) != rows*q || len(keys) != rows*srcLen*kw || len(scores) != rows*srcLen || len(work) != l.WorkSize(rows, srcLen) {
		panic(fmt.Sprintf("align: Local.Score got query %d, keys %d, scores %d, work %d for %d×%d", len(query), len(keys), len(scores), len(work), rows, srcLen))
	}
	z, sig := work[:rows*a], work[2*rows*a:]
	kernels.Linear(query, l.PosW.Data, rows, q, a, z, a)
	kernels.TanhSlice(z)
	for r := 0; r < rows; r++ {
		var s T
		for j, v := range l.PosV.Data {
			s += v * z[r*a+j]
		}
		sig[r] = kernels.Sigmoid(s)
		centre := (keys[r*srcLen*kw+q] - 1) * sig[r]
		qr := query[r*q : (r+1)*q]
		for i := 0; i < srcLen; i++ {
			logG, _, ok := l.gaussian(T(i) - centre)
			if !ok {
				scores[r*srcLen+i] = kernels.MaskNegative
				continue
			}
			k := keys[(r*srcLen+i)*kw:][:q]
			e := logG
			for j, kj := range k {
				e += qr[j] * kj
			}
			scores[r*srcLen+i] = e
		}
	}
}

// ScoreBackward differentiates Score; positions outside the window have no gradient.
func (l *Local[T]) ScoreBackward(query, keys, _, work, dScores []T, rows, srcLen int, dQuery, dKeys, _ []T, grads [][]T) {
	q, kw, a := l.QueryDim, l.KeyWidth(), l.Dim
	z, dz, sig := work[:rows*a], work[rows*a:2*rows*a], work[2*rows*a:]
	gPosW, gPosV := grads[1], grads[2]
	for r := 0; r < rows; r++ {
		length := keys[r*srcLen*kw+q]
		centre := (length - 1) * sig[r]
		qr, dqr := query[r*q:(r+1)*q], dQuery[r*q:(r+1)*q]
		var dCentre T
		for i := 0; i < srcLen; i++ {
			de := dScores[r*srcLen+i]
			_, dc, ok := l.gaussian(T(i) - centre)
			if de == 0 || !ok {
				continue
			}
			// forward: e = qᵀ k_i − 2 (i − centre)² / D²
			k, dk := keys[(r*srcLen+i)*kw:][:q], dKeys[(r*srcLen+i)*kw:][:q]
			for j := range k {
				dqr[j] += de * k[j]
				dk[j] += de * qr[j]
			}
			dCentre += de * dc
		}
		// forward: centre = (L − 1) σ(v_pᵀ z), z = tanh(W_p q)
		ds := dCentre * (length - 1) * sig[r] * (1 - sig[r])
		zr, dzr := z[r*a:(r+1)*a], dz[r*a:(r+1)*a]
		for j, v := range l.PosV.Data {
			gPosV[j] += ds * zr[j]
			dzr[j] = ds * v * (1 - zr[j]*zr[j])
		}
	}
	kernels.LinearBackward(query, l.PosW.Data, dz, rows, q, a, a, dQuery, gPosW)
}

// graphLocal is local-p attention bound to one training graph.
type graphLocal[T kernels.Float] struct {
	l             *Local[T]
	w, posW, posV *G.Node
	rows, srcLen  int
	lengths       *[]int
}

// Graph binds the weights to p for batches of rows × srcLen.
func (l *Local[T]) Graph(p *graph.Params[T], rows, srcLen int) GraphScorer {
	return &graphLocal[T]{l: l, w: p.Whole(l.W), posW: p.Whole(l.PosW), posV: p.Whole(l.PosV), rows: rows, srcLen: srcLen}
}

// Keys returns W h_i, (rows, srcLen, QueryDim), and remembers where the lengths are read from.
func (g *graphLocal[T]) Keys(memory *G.Node, lengths *[]int) *G.Node {
	g.lengths = lengths
	return graphProject(memory, g.w, g.rows, g.srcLen, g.l.QueryDim)
}

// Score returns the windowed scores (rows, srcLen): the centre predictor and the general score in gorgonia ops,
// the window and the Gaussian term in one op (it reads the lengths at run time).
func (g *graphLocal[T]) Score(query, keys, _ *G.Node) *G.Node {
	sig := G.Must(G.Sigmoid(G.Must(G.Mul(G.Must(G.Tanh(G.Must(G.Mul(query, g.posW)))), g.posV))))
	general := graphDotScores[T](query, keys, g.rows, g.srcLen, 1)
	rows, srcLen, lengths := g.rows, g.srcLen, g.lengths
	dScores, dSig := make([]T, rows*srcLen), make([]T, rows) // this step's gradients (gorgonia reads them later)
	return graph.Fused(graph.FusedOp[T]{
		Name:  fmt.Sprintf("LocalWindow(%d,%d,%d)", rows, srcLen, g.l.Window),
		Shape: tensor.Shape{rows, srcLen},
		Forward: func(in [][]T, out []T) {
			for r := 0; r < rows; r++ {
				centre := T((*lengths)[r]-1) * in[1][r]
				for i := 0; i < srcLen; i++ {
					logG, _, ok := g.l.gaussian(T(i) - centre)
					if ok {
						out[r*srcLen+i] = in[0][r*srcLen+i] + logG
					} else {
						out[r*srcLen+i] = kernels.MaskNegative
					}
				}
			}
		},
		Backward: func(in [][]T, grad []T) [][]T {
			for r := 0; r < rows; r++ {
				length := T((*lengths)[r] - 1)
				centre := length * in[1][r]
				var dCentre T
				for i := 0; i < srcLen; i++ {
					_, dc, ok := g.l.gaussian(T(i) - centre)
					if !ok {
						dScores[r*srcLen+i] = 0
						continue
					}
					dScores[r*srcLen+i] = grad[r*srcLen+i]
					dCentre += grad[r*srcLen+i] * dc
				}
				dSig[r] = dCentre * length
			}
			return [][]T{dScores, dSig}
		},
	}, general, sig)
}
