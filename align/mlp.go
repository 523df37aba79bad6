package align

import (
	"fmt"
	"math/rand/v2"

	"github.com/attend-nmt/attend/kernels"
	"github.com/attend-nmt/attend/param"
)

// MLP is the additive (Bahdanau) score
//
//	e_ti = vᵀ tanh(W_s s_{t-1} + b_s + W_h h_i)
//
// where s_{t-1} is the decoder state (the query) and h_i the encoder state at source position i. W_h h_i is the
// key, computed once per sentence.
type MLP[T kernels.Float] struct {
	MemDim, QueryDim, Dim int
	MemW                  *param.Tensor[T] // W_h (MemDim, Dim), no bias
	QueryW                *param.Tensor[T] // W_s (QueryDim, Dim)
	QueryB                *param.Tensor[T] // b_s (Dim)
	V                     *param.Tensor[T] // v (Dim)
}

// NewMLP registers the score's parameters in set as "attn.w_h", "attn.w_s", "attn.b_s" and "attn.v".
func NewMLP[T kernels.Float](set *param.Set[T], memDim, queryDim, dim int) *MLP[T] {
	return &MLP[T]{MemDim: memDim, QueryDim: queryDim, Dim: dim,
		MemW:   set.Add("attn.w_h", memDim, dim),
		QueryW: set.Add("attn.w_s", queryDim, dim),
		QueryB: set.Add("attn.b_s", dim),
		V:      set.Add("attn.v", dim),
	}
}

// Init draws every weight uniformly in ±1/sqrt(fan-in), as PyTorch's nn.Linear does.
func (m *MLP[T]) Init(rng *rand.Rand) {
	param.Uniform(m.MemW, param.InvSqrt(m.MemDim), rng)
	param.Uniform(m.QueryW, param.InvSqrt(m.QueryDim), rng)
	param.Uniform(m.QueryB, param.InvSqrt(m.QueryDim), rng)
	param.Uniform(m.V, param.InvSqrt(m.Dim), rng)
}

// Keys returns W_h h_i for every position: (rows, srcLen, Dim).
func (m *MLP[T]) Keys(memory []T, rows, srcLen int) []T {
	if len(memory) != rows*srcLen*m.MemDim {
		panic(fmt.Sprintf("align: MLP.Keys got memory of %d values for %d×%d×%d", len(memory), rows, srcLen, m.MemDim))
	}
	keys := make([]T, rows*srcLen*m.Dim)
	kernels.Gemm(false, false, rows*srcLen, m.Dim, m.MemDim, 1, memory, m.MemDim, m.MemW.Data, m.Dim, 0, keys, m.Dim)
	return keys
}

// Score writes e (rows, srcLen) for the queries (rows, QueryDim).
func (m *MLP[T]) Score(query, keys []T, rows, srcLen int, scores []T) {
	d := m.Dim
	q := make([]T, rows*d)
	kernels.Gemm(false, false, rows, d, m.QueryDim, 1, query, m.QueryDim, m.QueryW.Data, d, 0, q, d)
	kernels.AddBias(q, rows, d, m.QueryB.Data)
	pre := make([]T, d)
	for r := 0; r < rows; r++ {
		qr := q[r*d : (r+1)*d]
		for i := 0; i < srcLen; i++ {
			k := keys[(r*srcLen+i)*d:][:d]
			for a := range pre {
				pre[a] = k[a] + qr[a]
			}
			kernels.TanhSlice(pre)
			var e T
			for a, v := range m.V.Data {
				e += v * pre[a]
			}
			scores[r*srcLen+i] = e
		}
	}
}
