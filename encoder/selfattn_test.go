package encoder

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/attend-nmt/attend/internal/gradcheck"
	"github.com/attend-nmt/attend/kernels"
	"github.com/attend-nmt/attend/param"
)

// Tolerances of the self-attention tests.
const (
	selfForwardTol64 = 1e-12 // float64 against the reference: summation order only
	selfForwardTol32 = 2e-4  // float32 against the float64 reference (layer-norm outputs are of order 1)
	// selfGradTol is the relative gap allowed to float64 central differences. The loss sums about 100 outputs of
	// order 1, so the differences carry about 1e-9 of rounding noise, 1e-6 of gradcheck's 1e-3 floor: the key
	// biases' true gradient is exactly 0 (a softmax ignores a shift common to all keys) and shows just that.
	selfGradTol  = 1e-5
	weightSumTol = 1e-12 // |Σ weights − 1| over a sentence's real words
)

type selfAttnCase struct {
	rows, srcLen, dim, heads, layers int
	lengths                          []int
}

// newSelfAttn builds the blocks of c in a fresh set with weights drawn from seed, biases and layer-norm
// parameters drawn too (not left at 0 and 1), so that every term of the formulas is exercised.
func newSelfAttn[T kernels.Float](c selfAttnCase, seed uint64) (*SelfAttention[T], *param.Set[T]) {
	set := param.NewSet[T]()
	s := NewSelfAttention(set, c.layers, c.dim, c.heads)
	set.Pack()
	rng := rand.New(rand.NewPCG(seed, 17))
	for _, p := range s.Params() {
		if isGain(s, p) {
			for i := range p.Data {
				p.Data[i] = T(1 + 0.3*rng.NormFloat64())
			}
			continue
		}
		param.Uniform(p, 1/math.Sqrt(float64(p.Shape[len(p.Shape)-1])), rng)
	}
	return s, set
}

func isGain[T kernels.Float](s *SelfAttention[T], p *param.Tensor[T]) bool {
	for i := range s.Blocks {
		if p == s.Blocks[i].Norms[0].Gain || p == s.Blocks[i].Norms[1].Gain {
			return true
		}
	}
	return false
}

// selfAttnRef is the plain reference of SelfAttention.Forward: every sum written out with loops, over float64
// weights in the order of Params. It returns the output and, per block and head, the weights (B, S, S).
func selfAttnRef(w [][]float64, memory []float64, lengths []int, rows, srcLen, dim, heads, layers int) (out []float64, att [][][]float64) {
	hd, f := dim/heads, FFNMultiplier*dim
	x := append([]float64(nil), memory...)
	layerNorm := func(v, gain, bias []float64) []float64 {
		var mean, variance float64
		for _, e := range v {
			mean += e
		}
		mean /= float64(len(v))
		for _, e := range v {
			variance += (e - mean) * (e - mean)
		}
		variance /= float64(len(v))
		o := make([]float64, len(v))
		for j, e := range v {
			o[j] = (e-mean)/math.Sqrt(variance+kernels.LayerNormEps)*gain[j] + bias[j]
		}
		return o
	}
	for l := 0; l < layers; l++ {
		b := w[l*blockTensors : (l+1)*blockTensors]
		qW, qB, kW, kB, vW, vB, oW, oB := b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]
		n1G, n1B, f1W, f1B, f2W, f2B, n2G, n2B := b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]
		// proj(W, B, r, i, j) is head j's projection of position i of row r.
		proj := func(W, B []float64, r, i, j int) []float64 {
			o := make([]float64, hd)
			for c := 0; c < hd; c++ {
				o[c] = B[j*hd+c]
				for u := 0; u < dim; u++ {
					o[c] += x[(r*srcLen+i)*dim+u] * W[(j*dim+u)*hd+c]
				}
			}
			return o
		}
		next := make([]float64, len(x))
		layerAtt := make([][]float64, heads)
		for j := range layerAtt {
			layerAtt[j] = make([]float64, rows*srcLen*srcLen)
		}
		for r := 0; r < rows; r++ {
			L := lengths[r]
			for i := 0; i < L; i++ {
				ctx := make([]float64, dim)
				for j := 0; j < heads; j++ {
					q := proj(qW, qB, r, i, j)
					scores := make([]float64, L)
					maxScore := math.Inf(-1)
					for k := 0; k < L; k++ {
						key := proj(kW, kB, r, k, j)
						for c := 0; c < hd; c++ {
							scores[k] += q[c] * key[c]
						}
						scores[k] /= math.Sqrt(float64(hd))
						maxScore = math.Max(maxScore, scores[k])
					}
					var sum float64
					for k := range scores {
						scores[k] = math.Exp(scores[k] - maxScore)
						sum += scores[k]
					}
					for k := 0; k < L; k++ {
						a := scores[k] / sum
						layerAtt[j][(r*srcLen+i)*srcLen+k] = a
						val := proj(vW, vB, r, k, j)
						for c := 0; c < hd; c++ {
							ctx[j*hd+c] += a * val[c]
						}
					}
				}
				res1 := make([]float64, dim)
				for u := 0; u < dim; u++ {
					res1[u] = x[(r*srcLen+i)*dim+u] + oB[u]
					for c := 0; c < dim; c++ {
						res1[u] += ctx[c] * oW[c*dim+u]
					}
				}
				y1 := layerNorm(res1, n1G, n1B)
				hidden := make([]float64, f)
				for h := 0; h < f; h++ {
					hidden[h] = f1B[h]
					for u := 0; u < dim; u++ {
						hidden[h] += y1[u] * f1W[u*f+h]
					}
					hidden[h] = math.Max(hidden[h], 0)
				}
				res2 := make([]float64, dim)
				for u := 0; u < dim; u++ {
					res2[u] = y1[u] + f2B[u]
					for h := 0; h < f; h++ {
						res2[u] += hidden[h] * f2W[h*dim+u]
					}
				}
				copy(next[(r*srcLen+i)*dim:], layerNorm(res2, n2G, n2B))
			}
		}
		x = next
		att = append(att, layerAtt)
	}
	return x, att
}

func weightsOf[T kernels.Float](s *SelfAttention[T]) [][]float64 {
	var out [][]float64
	for _, w := range s.Weights() {
		v := make([]float64, len(w))
		for i, x := range w {
			v[i] = float64(x)
		}
		out = append(out, v)
	}
	return out
}

func runSelfAttn[T kernels.Float](c selfAttnCase, memory []float64) ([]T, *SelfAttentionCache[T]) {
	s, _ := newSelfAttn[T](c, 1)
	out := make([]T, len(memory))
	cache := s.Forward(s.Weights(), convert[T](memory), c.lengths, c.rows, c.srcLen, out, kernels.NewArena[T](), "t")
	return out, cache
}

func TestSelfAttentionForwardMatchesReference(t *testing.T) {
	cases := map[string]selfAttnCase{
		"odd B=3 S=5 D=8, 2 heads, 2 layers": {rows: 3, srcLen: 5, dim: 8, heads: 2, layers: 2, lengths: []int{5, 3, 1}},
		"D=256, 4 heads":                     {rows: 2, srcLen: 4, dim: 256, heads: 4, layers: 1, lengths: []int{4, 2}},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			memory := gradcheck.Random(rand.New(rand.NewPCG(3, uint64(c.dim))), c.rows*c.srcLen*c.dim, 1)
			s, _ := newSelfAttn[float64](c, 1)
			want, wantAtt := selfAttnRef(weightsOf(s), memory, c.lengths, c.rows, c.srcLen, c.dim, c.heads, c.layers)
			o64, cache := runSelfAttn[float64](c, memory)
			gradcheck.Close(t, "out (float64)", o64, want, selfForwardTol64)
			for l := 0; l < c.layers; l++ {
				for j := 0; j < c.heads; j++ {
					gradcheck.Close(t, fmt.Sprintf("weights of block %d head %d", l, j), cache.Weights(l, j), wantAtt[l][j], selfForwardTol64)
				}
			}
			o32, _ := runSelfAttn[float32](c, memory)
			gradcheck.Close(t, "out (float32)", widen(o32), want, selfForwardTol32)
		})
	}
}

func TestSelfAttentionBackwardMatchesFiniteDifferences(t *testing.T) {
	c := selfAttnCase{rows: 3, srcLen: 5, dim: 8, heads: 2, layers: 2, lengths: []int{5, 3, 1}}
	rng := rand.New(rand.NewPCG(2, 3))
	s, _ := newSelfAttn[float64](c, 4)
	n := c.rows * c.srcLen * c.dim
	memory := gradcheck.Random(rng, n, 1)
	project := gradcheck.Random(rng, n, 1) // on every output, padded ones included (they are constant 0)
	weights := s.Weights()
	out := make([]float64, n)
	arena := kernels.NewArena[float64]()
	loss := func() float64 {
		s.Forward(weights, memory, c.lengths, c.rows, c.srcLen, out, arena, "t")
		return gradcheck.Dot(out, project)
	}
	cache := s.Forward(weights, memory, c.lengths, c.rows, c.srcLen, out, arena, "t")
	dMemory := make([]float64, n)
	grads := make([][]float64, len(weights))
	for i, w := range weights {
		grads[i] = make([]float64, len(w))
	}
	s.Backward(weights, cache, project, dMemory, grads)
	// Padded positions are constant 0 at the output and masked as keys: their inputs get no gradient at all.
	for r, L := range c.lengths {
		for i := L; i < c.srcLen; i++ {
			for u := 0; u < c.dim; u++ {
				if g := dMemory[(r*c.srcLen+i)*c.dim+u]; g != 0 {
					t.Fatalf("gradient %g reaches padded position %d of row %d (length %d)", g, i, r, L)
				}
			}
		}
	}
	tensors := []gradcheck.Tensor{{Name: "memory", X: memory, Grad: dMemory}}
	for i, p := range s.Params() {
		tensors = append(tensors, gradcheck.Tensor{Name: p.Name, X: weights[i], Grad: grads[i]})
	}
	gradcheck.Check(t, loss, tensors, 40, rng, selfGradTol)
}

func TestSelfAttentionWeightsSumToOneOverRealWords(t *testing.T) {
	c := selfAttnCase{rows: 4, srcLen: 6, dim: 8, heads: 2, layers: 2, lengths: []int{6, 3, 1, 0}}
	memory := gradcheck.Random(rand.New(rand.NewPCG(8, 8)), c.rows*c.srcLen*c.dim, 3)
	out, cache := runSelfAttn[float64](c, memory)
	for i, v := range out {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			t.Fatalf("output %d is %g", i, v)
		}
	}
	for l := 0; l < c.layers; l++ {
		for j := 0; j < c.heads; j++ {
			w := cache.Weights(l, j)
			for r, L := range c.lengths {
				for i := 0; i < c.srcLen; i++ {
					row := w[(r*c.srcLen+i)*c.srcLen:][:c.srcLen]
					var sum float64
					for k, a := range row {
						if (k >= L || i >= L) && a != 0 {
							t.Fatalf("block %d head %d row %d (length %d): query %d gives key %d weight %g, want exactly 0", l, j, r, L, i, k, a)
						}
						sum += a
					}
					if i < L && math.Abs(sum-1) > weightSumTol {
						t.Errorf("block %d head %d row %d query %d: weights sum to %.15g over %d real words", l, j, r, i, sum, L)
					}
				}
			}
		}
	}
}

func TestSelfAttentionPaddingDoesNotChangeRealPositions(t *testing.T) {
	c := selfAttnCase{rows: 3, srcLen: 5, dim: 8, heads: 2, layers: 2, lengths: []int{5, 3, 1}}
	rng := rand.New(rand.NewPCG(6, 6))
	memory := gradcheck.Random(rng, c.rows*c.srcLen*c.dim, 1)
	base, _ := runSelfAttn[float64](c, memory)
	// Garbage at every padded position, and two more padded positions per row.
	wide := c
	wide.srcLen = c.srcLen + 2
	padded := gradcheck.Random(rng, c.rows*wide.srcLen*c.dim, 100)
	for r, L := range c.lengths {
		copy(padded[r*wide.srcLen*c.dim:][:L*c.dim], memory[r*c.srcLen*c.dim:][:L*c.dim])
	}
	got, _ := runSelfAttn[float64](wide, padded)
	for r, L := range c.lengths {
		gradcheck.Close(t, fmt.Sprintf("row %d real positions", r), got[r*wide.srcLen*c.dim:][:L*c.dim], base[r*c.srcLen*c.dim:][:L*c.dim], selfForwardTol64)
		for i, v := range got[(r*wide.srcLen+L)*c.dim : (r+1)*wide.srcLen*c.dim] {
			if v != 0 {
				t.Fatalf("row %d: padded output %d is %g, want 0", r, L*c.dim+i, v)
			}
		}
	}
}

// BenchmarkSelfAttention is one block's forward and backward pass at the small config's width (D=256, 4 heads)
// over a batch of 64 sentences of 20 words.
func BenchmarkSelfAttention(b *testing.B) {
	c := selfAttnCase{rows: 64, srcLen: 20, dim: 256, heads: 4, layers: 1}
	for r := 0; r < c.rows; r++ {
		c.lengths = append(c.lengths, 10+r%11)
	}
	s, _ := newSelfAttn[float32](c, 1)
	n := c.rows * c.srcLen * c.dim
	memory, out, dMemory := convert[float32](gradcheck.Random(rand.New(rand.NewPCG(1, 1)), n, 1)), make([]float32, n), make([]float32, n)
	weights := s.Weights()
	grads := make([][]float32, len(weights))
	for i, w := range weights {
		grads[i] = make([]float32, len(w))
	}
	arena := kernels.NewArena[float32]()
	for b.Loop() {
		cache := s.Forward(weights, memory, c.lengths, c.rows, c.srcLen, out, arena, "b")
		s.Backward(weights, cache, out, dMemory, grads)
	}
}
