package align

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/attend-nmt/attend/param"
)

func TestAttentionWeightsSumToOneAndAreZeroOnPadding(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	rows, srcLen, memDim := 4, 7, 5
	lengths := []int{7, 3, 1, 5}
	scores := make([]float64, rows*srcLen)
	for i := range scores {
		scores[i] = 40 * rng.NormFloat64() // large scores: the max shift must keep exp finite
	}
	memory := make([]float64, rows*srcLen*memDim)
	for i := range memory {
		memory[i] = rng.NormFloat64()
	}
	weights := make([]float64, rows*srcLen)
	ctx := make([]float64, rows*memDim)
	Attend(scores, lengths, memory, rows, srcLen, memDim, weights, ctx)
	for r := 0; r < rows; r++ {
		var sum float64
		for i := 0; i < srcLen; i++ {
			w := weights[r*srcLen+i]
			if i >= lengths[r] && w != 0 {
				t.Fatalf("row %d padding position %d has weight %g, want exactly 0", r, i, w)
			}
			if math.IsNaN(w) || w < 0 {
				t.Fatalf("row %d position %d: weight %g", r, i, w)
			}
			sum += w
		}
		if math.Abs(sum-1) > 1e-12 {
			t.Fatalf("row %d weights sum to %.15f", r, sum)
		}
		for d := 0; d < memDim; d++ {
			var want float64
			for i := 0; i < srcLen; i++ {
				want += weights[r*srcLen+i] * memory[(r*srcLen+i)*memDim+d]
			}
			if math.Abs(ctx[r*memDim+d]-want) > 1e-12 {
				t.Fatalf("context row %d dim %d: %g, want %g", r, d, ctx[r*memDim+d], want)
			}
		}
	}
}

// TestAdditiveScoreMatchesFormula compares the batched score with e_ti = vᵀ tanh(W_s s + b_s + W_h h_i) written out
// element by element.
func TestAdditiveScoreMatchesFormula(t *testing.T) {
	rng := rand.New(rand.NewPCG(2, 2))
	set := param.NewSet[float64]()
	m := NewAdditive(set, 6, 5, 3)
	m.Init(rng)
	rows, srcLen := 2, 4
	memory := make([]float64, rows*srcLen*6)
	query := make([]float64, rows*5)
	for i := range memory {
		memory[i] = rng.NormFloat64()
	}
	for i := range query {
		query[i] = rng.NormFloat64()
	}
	scores := make([]float64, rows*srcLen)
	keys := make([]float64, rows*srcLen*m.KeyWidth())
	m.Keys(memory, []int{srcLen, srcLen}, rows, srcLen, keys)
	m.Score(query, keys, nil, rows, srcLen, scores, make([]float64, m.WorkSize(rows, srcLen)))
	for r := 0; r < rows; r++ {
		for i := 0; i < srcLen; i++ {
			var e float64
			for a := 0; a < 3; a++ {
				pre := m.QueryB.Data[a]
				for k := 0; k < 5; k++ {
					pre += m.QueryW.Data[k*3+a] * query[r*5+k]
				}
				for k := 0; k < 6; k++ {
					pre += m.MemW.Data[k*3+a] * memory[(r*srcLen+i)*6+k]
				}
				e += m.V.Data[a] * math.Tanh(pre)
			}
			if math.Abs(scores[r*srcLen+i]-e) > 1e-12 {
				t.Fatalf("score[%d,%d] = %g, want %g", r, i, scores[r*srcLen+i], e)
			}
		}
	}
}
